"""The HTTP side of the freshness contract: a read names the generation it needs (query
`min_generation` or header `Dory-Min-Generation`) and is answered once the index holds it, or with
503 index_behind; every answer says the generation it was made at (`Dory-Generation`)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Header, Query, Request, Response

from dory.service import DoryService

GENERATION_HEADER = "Dory-Generation"


async def _wanted(
    request: Request,
    response: Response,
    min_generation: Annotated[
        int | None, Query(ge=0, le=2**62, description="wait until the index holds this generation (a write's answer)")
    ] = None,
    dory_min_generation: Annotated[int | None, Header(ge=0, le=2**62)] = None,
) -> int:
    """Wait for the generation asked for (the higher of query and header), bounded by the server's
    wait; answers with the generation reached, also set as the `Dory-Generation` header."""
    service: DoryService = request.app.state.service
    wanted = max(min_generation or 0, dory_min_generation or 0)
    wait_s = request.app.state.settings.http.min_generation_wait_s
    reached: int = await request.app.state.limits.run(service.wait_for_generation, wanted, wait_s)
    response.headers[GENERATION_HEADER] = str(reached)
    return reached


Fresh = Annotated[int, Depends(_wanted)]
