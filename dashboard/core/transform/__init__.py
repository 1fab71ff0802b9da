"""Transforming a table into a safer one: versioned steps and recipes, hierarchies, generalization, top/bottom
coding, record and cell suppression, microaggregation, identifier masking and pseudonyms, and batch jobs."""
