"""baseten_operator."""
