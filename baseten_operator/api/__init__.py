"""The BasetenModel API: names, words and pydantic types (docs/contract.md section 1)."""
