"""The BasetenModel API: names, words and pydantic types (BEHAVIOR.md section 1)."""
