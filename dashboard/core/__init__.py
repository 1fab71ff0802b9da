"""The privdash core: pure computation over pandas and numpy, with no knowledge of the dashboard."""
