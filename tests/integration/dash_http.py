"""A browser without a browser: the HTTP requests dash-renderer sends, for tests against a running server.

One :class:`DashSession` is one browser tab with its own cookie jar: :meth:`DashSession.open` loads a page (and
keeps the page load's ``endId`` that Dash binds background-job handles to); :meth:`DashSession.call` posts a
callback to ``/_dash-update-component`` as dash-renderer does; :meth:`DashSession.start` and
:meth:`DashSession.poll` run a background callback: the first request starts the job and answers with its signed
``cacheKey`` and ``job``, then the page polls with them (inputs blanked) until the answer holds ``response``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import requests

Prop = tuple[Any, str]

_CONFIG = re.compile(r'<script id="_dash-config" type="application/json"[^>]*>(.*?)</script>', re.S)


def _name(item: Any) -> str:
    return json.dumps(item, sort_keys=True, separators=(",", ":")) if isinstance(item, dict) else str(item)


def payload(
    outputs: Prop | Sequence[Prop],
    inputs: Sequence[tuple[Any, str, Any]],
    state: Sequence[tuple[Any, str, Any]] = (),
    changed: Sequence[str] | None = None,
) -> dict[str, Any]:
    """The body dash-renderer posts for one callback: ``outputs`` one ``(id, property)`` or a list of them;
    ``inputs`` and ``state`` ``(id, property, value)``; ``changed`` the triggering ``id.property`` names."""
    single = isinstance(outputs, tuple)
    items = [outputs] if single else list(outputs)
    specs = [{"id": item_id, "property": prop} for item_id, prop in items]
    names = [f"{_name(spec['id'])}.{spec['property']}" for spec in specs]
    body: dict[str, Any] = {
        "output": names[0] if single else ".." + "...".join(names) + "..",
        "outputs": specs[0] if single else specs,
        "inputs": [{"id": i, "property": p, "value": v} for i, p, v in inputs],
        "changedPropIds": list(changed) if changed is not None else [f"{_name(i)}.{p}" for i, p, _v in inputs],
    }
    if state:
        body["state"] = [{"id": i, "property": p, "value": v} for i, p, v in state]
    return body


def find(tree: Any, component_id: str) -> dict[str, Any] | None:
    """The component with ``component_id`` in a layout (as JSON), or None."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if node.get("props", {}).get("id") == component_id:
                return node
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return None


def texts(tree: Any) -> Iterator[str]:
    """Every string in a layout (as JSON)."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            yield node
        elif isinstance(node, dict):
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)


@dataclass
class Job:
    """A background job as its page knows it: its tab, request body and signed handles, what the polls showed."""

    tab: DashSession
    body: dict[str, Any]
    cache_key: str
    job: str
    progress: list[dict[str, Any]] = field(default_factory=list)
    response: dict[str, Any] | None = None
    status: int | None = None

    @property
    def pid(self) -> int:
        return int(self.job.split("~", 1)[0])

    @property
    def key(self) -> str:
        return self.cache_key.split("~", 1)[0]

    @property
    def done(self) -> bool:
        return self.response is not None or self.status == 204

    def poll(self) -> Job:
        """One poll from its tab (handles are bound to the page load that started the job)."""
        return self.tab.poll(self)


class DashSession:
    """One browser tab talking to the Dash app at ``base`` (its own cookies)."""

    def __init__(self, base: str, timeout: float = 60.0) -> None:
        self.base = base.rstrip("/")
        self.http = requests.Session()
        self.timeout = timeout
        self.end_id: str | None = None

    def open(self, href: str) -> requests.Response:
        """GET a page, as the address bar does; keeps the page load's ``endId``."""
        response = self.http.get(self.base + href, timeout=self.timeout)
        response.raise_for_status()
        match = _CONFIG.search(response.text)
        if match is None:
            raise AssertionError(f"{href} is not a Dash page")
        self.end_id = json.loads(match.group(1))["end_id"]
        return response

    def call(self, body: dict[str, Any], **params: str) -> requests.Response:
        """POST one callback, with ``endId`` and extra query parameters (``cacheKey``, ``job``, ``cancelJob``)."""
        query = {"endId": self.end_id or "", **params}
        return self.http.post(f"{self.base}/_dash-update-component", params=query, json=body, timeout=self.timeout)

    def start(self, body: dict[str, Any]) -> Job:
        """Start a background callback; the answer holds the job's signed handles."""
        response = self.call(body)
        response.raise_for_status()
        data = response.json()
        if "cacheKey" not in data:
            raise AssertionError(f"not a background callback: {data}")
        return Job(tab=self, body=body, cache_key=data["cacheKey"], job=data["job"])

    def poll(self, job: Job) -> Job:
        """One poll of ``job``, as dash-renderer's timer sends it (inputs and state blanked)."""
        blank = json.loads(json.dumps(job.body))
        for item in [*blank["inputs"], *blank.get("state", [])]:
            for entry in item if isinstance(item, list) else [item]:  # a pattern-matching group is a list
                entry["value"] = None
        response = self.call(blank, cacheKey=job.cache_key, job=job.job)
        job.status = response.status_code
        if response.status_code == 200:
            data = response.json()
            if data.get("progress"):
                job.progress.append(data["progress"])
            if "response" in data:
                job.response = data["response"]
        elif response.status_code != 204:
            raise AssertionError(f"poll answered {response.status_code}: {response.text[:500]}")
        return job
