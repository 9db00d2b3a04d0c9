"""truss."""
