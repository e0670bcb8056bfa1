"""Bundled test models (MJCF paths)."""

from pathlib import Path

ASSET_DIR = Path(__file__).parent / "assets"
FREE_BODY_XML = str(ASSET_DIR / "free_body.xml")
"""A 100 kg free-flying box named 'spacecraft' (1.0 x 0.6 x 0.4 m)."""
