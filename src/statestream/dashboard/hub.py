"""Fan-out of the live messages to every open page, with a bounded queue per page.

A browser that reads slower than the pipeline writes must not grow the server's memory: each page
has a queue of at most `size` messages, and when it is full the oldest message is dropped (and
counted) — the page then misses some points but stays live.
"""

from __future__ import annotations

import asyncio
from collections import deque


class ClientQueue:
    """The messages waiting to be sent to one page (asyncio side only)."""

    def __init__(self, size: int) -> None:
        self._messages: deque[str] = deque(maxlen=size)
        self._ready = asyncio.Event()
        self.dropped = 0

    def put(self, message: str) -> None:
        if len(self._messages) == self._messages.maxlen:
            self.dropped += 1
        self._messages.append(message)
        self._ready.set()

    def __len__(self) -> int:
        return len(self._messages)

    async def get(self) -> str:
        while not self._messages:
            self._ready.clear()
            await self._ready.wait()
        return self._messages.popleft()


class ClientHub:
    """The open pages; `publish` puts one message in every page's queue.

    >>> hub = ClientHub(queue_size=2)
    >>> page = hub.connect()
    >>> for n in range(3):
    ...     hub.publish(str(n))
    >>> len(page), page.dropped
    (2, 1)
    """

    def __init__(self, queue_size: int = 64) -> None:
        self.queue_size = queue_size
        self._clients: set[ClientQueue] = set()
        self._dropped_by_gone = 0

    def connect(self) -> ClientQueue:
        client = ClientQueue(self.queue_size)
        self._clients.add(client)
        return client

    def disconnect(self, client: ClientQueue) -> None:
        if client in self._clients:
            self._clients.discard(client)
            self._dropped_by_gone += client.dropped

    def publish(self, message: str) -> None:
        for client in self._clients:
            client.put(message)

    @property
    def clients(self) -> int:
        return len(self._clients)

    @property
    def dropped(self) -> int:
        """Messages dropped for slow pages since the start."""
        return self._dropped_by_gone + sum(c.dropped for c in self._clients)
