"""Stylesheets and browser scripts of the dashboard, installed as the package ``dashboard.assets``."""
