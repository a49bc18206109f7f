"""The live web dashboard ``accord serve`` serves at ``/ui`` (``ui = false`` turns it off):
plain HTML, CSS and JavaScript shipped in this package, and the reads its page makes under
``/ui/api/``, authenticated and scoped like the API (see docs/dashboard.md)."""

from accord.dashboard._app import PREFIX, DashboardApp, handles

__all__ = ["PREFIX", "DashboardApp", "handles"]
