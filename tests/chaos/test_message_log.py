import numpy as np

from statestream.chaos.arrivals import Awaited
from statestream.chaos.message_log import MessageLog


def test_a_log_gives_back_every_message_in_order_across_its_chunks() -> None:
    log = MessageLog[tuple[str, bytes]](chunk=1000)
    sent = [(f"topic/{n % 7}", f'{{"n":{n}}}'.encode()) for n in range(4321)]
    for message in sent:
        log.append(message)
    assert len(log) == 4321 and list(log) == sent
    assert list(log) == sent  # a second read the same
    raw = sum(len(topic) + len(payload) for topic, payload in sent[:4000])
    assert 0 < log.stored_bytes < raw  # four chunks sealed, compressed


def test_awaited_counts_each_expected_key_once_and_passes_over_others() -> None:
    wait = Awaited("t", np.array([5, -3, 8, 5, 2**62]), int)
    assert wait.missing == 4
    wait.seen([b"8", b"8", b"7", b"-3"])
    assert wait.missing == 2
    wait.seen([])
    wait.seen([b"4611686018427387904", b"5", b"9"])
    assert wait.missing == 0


def test_awaited_with_nothing_expected_misses_nothing() -> None:
    wait = Awaited("t", np.array([], np.int64), int)
    wait.seen([b"1"])
    assert wait.missing == 0
