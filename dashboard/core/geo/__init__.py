"""Postcodes and geography: postcode parsing and levels, census population tables, threshold strategies, and the
polygons and adjacency of postcode units."""
