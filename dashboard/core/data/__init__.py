"""Reading tables and describing them: file readers and writers, the data contract (column roles and types) and
the built-in demo datasets."""
