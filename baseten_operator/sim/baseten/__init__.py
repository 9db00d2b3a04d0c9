"""baseten."""
