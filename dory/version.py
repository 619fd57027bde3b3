"""The installed package's version (shown by the HTTP API and the MCP server)."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version


def package_version() -> str:
    try:
        return version("dory-memory")
    except PackageNotFoundError:  # running from a checkout that was never installed
        return "0"
