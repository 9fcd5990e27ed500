"""Request bounds: timeouts, λ and task features outside their range are refused with
ERROR_INVALID_REQUEST (or the feature-length code) and a message giving the range, before
any work; a scene's own task features must fit the selector."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import pytest

from camp_planner.domains.interface.errors import ErrorCode, ServiceError
from camp_planner.domains.namo.scene_io import scene_from_task
from camp_planner.service.limits import MAX_LAMBDA, MAX_TIMEOUT_S, check_plan_request
from camp_planner.service.planning import CampService


@pytest.mark.parametrize(
    ("lam", "timeout"),
    [(math.inf, None), (-math.inf, None), (math.nan, None), (2 * MAX_LAMBDA, None)]
    + [(None, 1e10), (None, 1e7), (None, math.inf), (None, math.nan), (None, MAX_TIMEOUT_S + 1)],
)
def test_out_of_range_numbers_are_invalid_requests(
    lam: float | None, timeout: float | None
) -> None:
    with pytest.raises(ServiceError) as err:
        check_plan_request(lam, timeout)
    assert err.value.code == ErrorCode.INVALID_REQUEST
    assert "out of range" in err.value.message and "give a value in" in err.value.message


@pytest.mark.parametrize(
    ("lam", "timeout"),
    [(None, None), (0.0, 0.0), (-5.0, -1.0), (MAX_LAMBDA, MAX_TIMEOUT_S), (0.5, 30.0)],
)
def test_in_range_numbers_and_defaults_pass(lam: float | None, timeout: float | None) -> None:
    check_plan_request(lam, timeout)


@pytest.fixture(scope="module")
def service(namo_tiny: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> CampService:
    config, bundle = namo_tiny
    return CampService(
        config_path=config, bundle_path=bundle, artifacts=tmp_path_factory.mktemp("bounds")
    )


def _code(call: object) -> ErrorCode:
    assert callable(call)
    with pytest.raises(ServiceError) as err:
        call()
    assert err.value.message
    return err.value.code


@pytest.mark.pybullet
@pytest.mark.slow
def test_huge_or_misshapen_features_are_refused_never_nan(service: CampService) -> None:
    n = service.feature_length()
    assert _code(lambda: service.select(None, [3e38, -3e38] * 5000)) == (
        ErrorCode.WRONG_FEATURE_LENGTH if n != 10000 else ErrorCode.INVALID_REQUEST
    )
    assert _code(lambda: service.select(None, [3e38] * n)) == ErrorCode.INVALID_REQUEST
    assert _code(lambda: service.select(None, [math.inf] * n)) == ErrorCode.INVALID_SCENE
    ok = service.select(None, [0.0] * n)
    assert all(math.isfinite(p) for _, p in ok.alternatives)


@pytest.mark.pybullet
@pytest.mark.slow
def test_a_scenes_own_features_must_fit_and_are_used(service: CampService) -> None:
    scene = scene_from_task(service.pipe.task("test", 4))
    wrong = dataclasses.replace(scene, task_features=(1.0, 2.0))
    assert _code(lambda: service.select(wrong)) == ErrorCode.WRONG_FEATURE_LENGTH
    assert _code(lambda: service.plan(wrong)) == ErrorCode.WRONG_FEATURE_LENGTH
    # Features given with the scene are what the selector ranks on (the same as a request's).
    features = tuple(
        float(v) for v in service.pipe.domain.features(service.pipe.task("test", 5)).ravel()
    )
    own = service.select(dataclasses.replace(scene, task_features=features))
    given = service.select(scene, features)
    assert [(c.id, p) for c, p in own.alternatives] == [(c.id, p) for c, p in given.alternatives]


@pytest.mark.pybullet
@pytest.mark.slow
def test_plan_refuses_out_of_range_numbers_before_any_work(service: CampService) -> None:
    scene = scene_from_task(service.pipe.task("test", 4))
    assert _code(lambda: service.plan(scene, lam=math.inf)) == ErrorCode.INVALID_REQUEST
    assert _code(lambda: service.plan(scene, timeout_s=1e10)) == ErrorCode.INVALID_REQUEST


@pytest.mark.pybullet
@pytest.mark.slow
def test_scenes_must_be_in_the_services_frame(service: CampService) -> None:
    scene = scene_from_task(service.pipe.task("test", 4))
    service.frame_id = "odom"
    try:
        assert _code(lambda: service.select(scene)) == ErrorCode.INVALID_SCENE
        assert service.select(dataclasses.replace(scene, frame_id="odom")).context is not None
    finally:
        service.frame_id = "map"
