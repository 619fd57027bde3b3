"""Settings as every surface opens them: loaded by dory.config, then checked by the layers that own
each section (the ranking policy by search, the schedules by the job registry), so a bad rule or
cron string stops every command with a ConfigError naming it."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from dory.config import Settings, load_settings
from dory.search.policy import RankingPolicy


def check_settings(settings: Settings) -> Settings:
    RankingPolicy.from_settings(settings.search.policy)
    if settings.jobs.model_extra:  # the job registry (every job's module) loads only when [jobs] names one
        from dory.jobs.registry import check_schedules

        check_schedules(settings)
    return settings


def open_settings(
    corpus: str | os.PathLike[str] | None = None,
    overrides: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
) -> Settings:
    return check_settings(load_settings(corpus, overrides, env))
