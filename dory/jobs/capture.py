"""The capture job: new and grown harness transcripts into the session plane (dory/sessions/capture.py).

Run by the daemon on its sweep and when a transcript changes (dory/daemon/capture.py), or once by
hand (`dory ops run capture`). Off unless `[capture] enabled`. With `[capture] server` the pieces
go to the spool and the spool is drained to that server; otherwise they are saved here, each
transcript indexed as it is saved.
"""

from __future__ import annotations

from typing import Any

from dory.jobs.job import JobContext, JobResult
from dory.sessions.capture import CaptureReport, LocalSink, Sink, capture
from dory.sessions.capture_ledger import CaptureLedger
from dory.sessions.shipping import ShipReport, Spool, SpoolSink, drain


def run(ctx: JobContext) -> JobResult:
    cfg = ctx.settings.capture
    if not cfg.enabled:
        return JobResult(outputs={"enabled": False}, warnings=["capture is off (`dory capture on` turns it on)"])
    if ctx.dry_run:
        return JobResult(outputs={"enabled": True, "dry_run": True})
    if ctx.settings.output_root is None and not cfg.server:
        return JobResult(
            outputs={"enabled": True, "files": 0},
            warnings=["capture has nowhere to save sessions: this corpus has no output folder (--no-output)"],
        )
    ledger = CaptureLedger(ctx.settings.capture_db_path)
    try:
        spool = Spool(ctx.settings.capture_spool_path)
        sink: Sink = SpoolSink(spool) if cfg.server else LocalSink(ctx.api.ingest_session)
        report = capture(ctx.settings, ledger, sink)
        outputs = _outputs(report)
        warnings = list(report.warnings)
        if cfg.server:
            shipped = drain(spool, ledger, cfg.server, cfg.token, cfg.retry_max_s)
            outputs["shipping"] = _shipping(shipped)
            if shipped.error:
                warnings.append(f"{shipped.pending} pieces wait in the spool: {shipped.error}")
    finally:
        ledger.close()
    return JobResult(outputs=outputs, warnings=warnings)


def _outputs(report: CaptureReport) -> dict[str, Any]:
    return {
        "enabled": True,
        "files": report.files,
        "read": report.read,
        "restarted": report.restarted,
        "sessions": report.sessions,
        "messages": report.messages,
        "pieces": report.pieces,
        "redactions": report.redactions,
        "forgotten": report.forgotten,
    }


def _shipping(report: ShipReport) -> dict[str, Any]:
    return {"sent": report.sent, "refused": report.refused, "pending": report.pending, "error": report.error}
