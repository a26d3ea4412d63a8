"""How a party serves its application (:class:`ServeOptions`): declared once, for a reference service file's
``[service]`` table and a deployment file's ``[serve.NAME]`` tables alike."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class ServeOptions(BaseModel):
    """Where a served party listens and how it keeps events and bounds requests."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    host: str = Field("127.0.0.1", min_length=1, description="the address the API listens on")
    port: int = Field(8750, ge=0, le=65535, description="its port (0: any free one, printed at start)")
    reward_timeout_s: float = Field(3600.0, gt=0, le=365 * 86400, description="an event without a reward closes then")
    checkpoint_every: int = Field(100, ge=1, le=1_000_000, description="journalled changes between checkpoints")
    max_body_bytes: int = Field(64 * 1024, ge=1024, le=64 * 1024 * 1024, description="largest request body")
    body_timeout_s: float = Field(10.0, gt=0, le=600, description="seconds a client may take to send a body")
    keep_alive_s: float = Field(5.0, gt=0, le=600, description="idle seconds before a connection is closed")
    max_connections: int = Field(256, ge=1, le=100_000, description="concurrent connections (beyond: 503)")
    user_budget_epsilon: float | None = Field(
        None, gt=0, le=1e6, description="per-user privacy budget ε: a decision past it is refused (none: no budget)"
    )
    user_budget_delta: float = Field(1e-5, gt=0, lt=1, description="the δ the per-user budget's ε is composed at")
