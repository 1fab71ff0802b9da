"""The application layer: what the dashboard, the command line and the API share above the core, with no Dash.

Settings read once from the environment, the dataset store, the view state of a link, the fix plan that turns a
link's step list into core steps, and the rules of the postcode page. Pages and commands are thin adapters over it.
"""
