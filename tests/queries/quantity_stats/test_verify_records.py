from statestream.queries.quantity_stats.verify import _record


def test_a_machine_record_gives_its_series_time_and_value() -> None:
    value = b'{"thing":"R1","quantity":"q","phenomenonTime":1000,"result":2.5,"extra":1}'
    assert _record(value) == ("R1", "q", 1000.0, 2.5)


def test_what_the_query_dead_letters_is_left_out() -> None:
    bad = [
        b'{"thing":"R1","quantity":"q","phenomenonTime":1000,"result":NaN}',
        b'{"thing":"R1","quantity":"q","phenomenonTime":1000,"result":"x"}',
        b'{"thing":"R1","quantity":"q","phenomenonTime":1000}',
        b'{"thing":7,"quantity":"q","phenomenonTime":1000,"result":1}',
        b"not json",
    ]
    assert [_record(value) for value in bad] == [None] * len(bad)
