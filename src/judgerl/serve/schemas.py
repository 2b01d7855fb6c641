"""Request bodies of the reward server (pydantic models; FastAPI validates them).

Each judging endpoint takes either one item inline or a batch under ``items``:

* ``POST /v1/judge/pairwise``: ``{prompt, response_a, response_b}`` or ``{"items": [...]}``;
* ``POST /v1/judge/listwise``: ``{prompt, responses: [...]}`` or ``{"items": [...]}``;
* ``POST /v1/score``: ``{prompt, response}`` or ``{"items": [...]}``;
* ``POST /v1/rewards``: ``{"items": [{prompt, response, reference?}, ...]}``;
* ``POST /get_reward`` (OpenRLHF ``--remote_rm_url``): ``{"query": [...], "prompts": [...], "labels": [...]}``.

Every item (and every inline request) may carry ``rubric``: a per-prompt rubric shown to the judge after
the question (rubric-conditioned judging; untrusted text, neutralised like the prompt).

Unknown fields are rejected (``extra="forbid"``) so a misspelt field name gives a 422 naming it
instead of being ignored. Sizes (item counts, text lengths) are checked by the app against its
:class:`~judgerl.serve.app.ServeConfig` limits, since they are configurable per server.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PairItem(_Strict):
    """One pair to judge: the instruction and two candidate responses (shown as A and B)."""

    prompt: str
    response_a: str
    response_b: str
    rubric: str | None = None


class PointItem(_Strict):
    """One response to score."""

    prompt: str
    response: str
    rubric: str | None = None


class RewardItem(_Strict):
    """One policy response to turn into a reward.

    ``reference`` is required when the server runs a pairwise protocol (the response is judged
    against it) and ignored by pointwise protocols.
    """

    prompt: str
    response: str
    reference: str | None = None
    rubric: str | None = None


def _one_or_batch(data: Any, fields: tuple[str, ...]) -> Any:
    """Accept ``{fields...}`` or ``{"items": [...]}`` (not both, not neither)."""
    if not isinstance(data, dict):
        return data
    inline = [f for f in fields if f in data]
    if "items" in data and inline:
        raise ValueError(f"give either 'items' or the inline fields {list(fields)}, not both")
    if "items" not in data and not inline:
        raise ValueError(f"missing fields: give {list(fields)} or 'items' (a list of such objects)")
    return data


class PairwiseRequest(_Strict):
    """Body of ``POST /v1/judge/pairwise``: one pair inline or a batch under ``items``."""

    prompt: str | None = None
    response_a: str | None = None
    response_b: str | None = None
    rubric: str | None = None
    items: list[PairItem] | None = Field(default=None, min_length=1)

    @model_validator(mode="before")
    @classmethod
    def _shape(cls, data: Any) -> Any:
        return _one_or_batch(data, ("prompt", "response_a", "response_b"))

    def batch(self) -> tuple[list[PairItem], bool]:
        """(items, whether the request was a single inline item)."""
        if self.items is not None:
            return self.items, False
        return [PairItem(prompt=self.prompt, response_a=self.response_a, response_b=self.response_b,
                         rubric=self.rubric)], True

    @model_validator(mode="after")
    def _complete(self) -> "PairwiseRequest":
        if self.items is None:
            missing = [f for f in ("prompt", "response_a", "response_b") if getattr(self, f) is None]
            if missing:
                raise ValueError(f"missing fields: {missing}")
        return self


#: ``score_mode`` of a pointwise request (see :mod:`judgerl.serve.score_modes`); None = the server's.
ScoreModeField = Literal["parsed", "mean", "expected"] | None


class ScoreRequest(_Strict):
    """Body of ``POST /v1/score``: one response inline or a batch under ``items`` (+ ``score_mode``)."""

    prompt: str | None = None
    response: str | None = None
    rubric: str | None = None
    items: list[PointItem] | None = Field(default=None, min_length=1)
    score_mode: ScoreModeField = None

    @model_validator(mode="before")
    @classmethod
    def _shape(cls, data: Any) -> Any:
        return _one_or_batch(data, ("prompt", "response"))

    @model_validator(mode="after")
    def _complete(self) -> "ScoreRequest":
        if self.items is None:
            missing = [f for f in ("prompt", "response") if getattr(self, f) is None]
            if missing:
                raise ValueError(f"missing fields: {missing}")
        return self

    def batch(self) -> tuple[list[PointItem], bool]:
        """(items, whether the request was a single inline item)."""
        if self.items is not None:
            return self.items, False
        return [PointItem(prompt=self.prompt, response=self.response, rubric=self.rubric)], True


class ListwiseItem(_Strict):
    """One prompt with n >= 2 candidate responses (shown as Response 1..n)."""

    prompt: str
    responses: list[str] = Field(min_length=2)
    rubric: str | None = None


class ListwiseRequest(_Strict):
    """Body of ``POST /v1/judge/listwise``: one item inline or a batch under ``items``."""

    prompt: str | None = None
    responses: list[str] | None = Field(default=None, min_length=2)
    rubric: str | None = None
    items: list[ListwiseItem] | None = Field(default=None, min_length=1)

    @model_validator(mode="before")
    @classmethod
    def _shape(cls, data: Any) -> Any:
        return _one_or_batch(data, ("prompt", "responses"))

    @model_validator(mode="after")
    def _complete(self) -> "ListwiseRequest":
        if self.items is None:
            missing = [f for f in ("prompt", "responses") if getattr(self, f) is None]
            if missing:
                raise ValueError(f"missing fields: {missing}")
        return self

    def batch(self) -> tuple[list[ListwiseItem], bool]:
        """(items, whether the request was a single inline item)."""
        if self.items is not None:
            return self.items, False
        return [ListwiseItem(prompt=self.prompt, responses=self.responses, rubric=self.rubric)], True


class RewardsRequest(_Strict):
    """Body of ``POST /v1/rewards`` (``score_mode``: pointwise servers only)."""

    items: list[RewardItem] = Field(min_length=1)
    score_mode: ScoreModeField = None


class OpenRLHFRequest(BaseModel):
    """Body OpenRLHF's remote reward client posts to ``--remote_rm_url``.

    ``query`` holds full texts (templated prompt + response); ``prompts`` the templated prompts
    (used to split off the response); ``labels`` optional references. Extra keys OpenRLHF versions
    add (``metadata``, ...) are ignored.
    """

    model_config = ConfigDict(extra="ignore")

    query: list[str] = Field(min_length=1)
    prompts: list[str] | None = None
    labels: list[Any] | None = None

    @model_validator(mode="after")
    def _lengths(self) -> "OpenRLHFRequest":
        for name in ("prompts", "labels"):
            v = getattr(self, name)
            if v is not None and len(v) != len(self.query):
                raise ValueError(f"'{name}' has {len(v)} entries but 'query' has {len(self.query)}")
        if self.prompts is None:
            raise ValueError(
                "'prompts' is required: the judge needs the prompt separately from the response "
                "(OpenRLHF sends it alongside 'query')"
            )
        return self
