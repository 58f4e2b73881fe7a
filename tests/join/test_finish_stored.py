"""Finishing stored engines, as the final flush of a stream does: a template's spec found by its
result name, and a router that loads engines without records and finishes them."""

from __future__ import annotations

from statestream.join import (
    ComplementJoin,
    JoinRouter,
    JoinSpec,
    SeriesBatch,
    SpecTemplate,
    export_state,
    restore_state,
)
from statestream.testing import blocks_of_five


def test_a_template_finds_the_spec_of_a_result_name() -> None:
    template = SpecTemplate(tolerance=3.0)
    assert template.spec_for_result("vaPower_C11") == template.specs_for(["actSpeed_C11"])[0]
    assert template.spec_for_result("actSpeed_C11") is None
    assert template.spec_for_result("vaPower_") is None
    plain = SpecTemplate("L", "R", "out", function="product")
    assert plain.spec_for_result("out") == JoinSpec("L", "R", "out", function="product")
    assert SpecTemplate("a_{c}", "b_{c}", "{c}_x_{c}").spec_for_result("1_x_2") is None


def test_loaded_engines_finish_with_the_pairs_still_pending() -> None:
    spec = JoinSpec("L", "R", "out", function="product")
    records = blocks_of_five(20)  # the worked example: 23 pairs certain, 4 more with flush
    engine = ComplementJoin(spec)
    certain = 0
    for side, t, v in records:
        batch = SeriesBatch.of([t], [v])
        step = engine.process(left=batch) if side == "left" else engine.process(right=batch)
        certain += len(step.pairs)
    stored = {"m1": export_state(engine), "m2": export_state(engine)}
    router = JoinRouter([spec], load_engine=lambda thing, _: restore_state(spec, stored[thing]))
    router.load(["m1", "m2"], 0)
    router.load([], 0)
    pending = router.finish()
    assert certain == 23
    assert sorted(step.thing for step in pending) == ["m1", "m2"]
    assert [len(step.step.pairs) for step in pending] == [4, 4]
    assert pending[0].step.pairs.left_t.tolist() == [14_000.0] * 4
