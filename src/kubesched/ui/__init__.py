"""The web UI of ``kubesched up``: its server (server.py), the JSON it shows (views.py) and the
static front end (static/: Preact and htm, vendored by scripts/vendor_ui.sh)."""
