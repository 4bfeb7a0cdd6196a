"""pipeline.config: defaults file < --config FILE < PIPELINE_* env < flags; coercion; checks."""

from __future__ import annotations

import tomllib

import pytest

from pipeline import config
from pipeline.config import Settings
from pipeline.errors import UsageError


def load(config_file=None, flags=None, env=None) -> Settings:
    return config.load(config_file, flags, environ=env or {})


def test_defaults_file_matches_dataclass_defaults():
    with open(config.DEFAULT_FILE, "rb") as f:
        data = tomllib.load(f)["run"]
    assert set(data) <= {f for f in Settings().as_dict()}
    s = load()
    for k, v in data.items():
        assert getattr(s, k) == (v.upper() if k == "log_level" else v)


def test_precedence(tmp_path):
    cfg = tmp_path / "c.toml"
    cfg.write_text("[run]\nworkers = 3\nchunk_size = 111\nfail_on = ['invalid']\n"
                   "log_level = 'debug'\n")
    s = load(cfg)
    assert (s.workers, s.chunk_size, s.fail_on, s.log_level) == (3, 111, ["invalid"], "DEBUG")
    s = load(cfg, env={"PIPELINE_WORKERS": "5", "PIPELINE_FAIL_ON": "error, unsolvable"})
    assert (s.workers, s.chunk_size, s.fail_on) == (5, 111, ["error", "unsolvable"])
    s = load(cfg, flags={"workers": 7, "chunk_size": None},
             env={"PIPELINE_WORKERS": "5", "PIPELINE_CHUNK_SIZE": "222"})
    assert (s.workers, s.chunk_size) == (7, 222)


def test_config_file_without_run_table(tmp_path):
    cfg = tmp_path / "flat.toml"
    cfg.write_text("chunk_size = 9\n")
    assert load(cfg).chunk_size == 9


def test_empty_env_value_is_ignored():
    assert load(env={"PIPELINE_CHUNK_SIZE": ""}).chunk_size == Settings().chunk_size


@pytest.mark.parametrize("raw, value", [("1", True), ("yes", True), ("ON", True),
                                        ("false", False), ("0", False), ("off", False)])
def test_bool_coercion(raw, value):
    assert load(env={"PIPELINE_FIRST_SOLUTION": raw}).first_solution is value


def test_first_solution_sets_limit():
    assert load().limit == 2
    assert load(flags={"first_solution": True}).limit == 1


def test_scheduler_env_layers():
    assert load(env={"DASK_SCHEDULER_ADDRESS": "tcp://a:1"}).scheduler == "tcp://a:1"
    s = load(env={"DASK_SCHEDULER_ADDRESS": "tcp://a:1", "PIPELINE_SCHEDULER": "tcp://b:2"})
    assert s.scheduler == "tcp://b:2"
    assert load(flags={"scheduler": "tcp://c:3"},
                env={"PIPELINE_SCHEDULER": "tcp://b:2"}).scheduler == "tcp://c:3"


def test_worker_count():
    assert load(flags={"workers": 3}).worker_count() == 3
    assert load(flags={"workers": 0}).worker_count() >= 1


@pytest.mark.parametrize("flags, env, match", [
    ({"workers": -1}, {}, "workers"),
    ({"chunk_size": 0}, {}, "chunk size"),
    ({}, {"PIPELINE_CHUNK_SIZE": "ten"}, "chunk_size"),
    ({}, {"PIPELINE_WORKERS": "1.5"}, "workers"),
    ({}, {"PIPELINE_FIRST_SOLUTION": "maybe"}, "first_solution"),
    ({"fail_on": "solved,bogus"}, {}, "bogus"),
    ({"executor": "threads"}, {}, "executor"),
    ({"log_level": "loud"}, {}, "log-level"),
    ({}, {"PIPELINE_IN_FLIGHT_PER_WORKER": "0"}, "in_flight"),
])
def test_bad_values_are_usage_errors(flags, env, match):
    with pytest.raises(UsageError, match=match) as info:
        load(flags=flags, env=env)
    assert info.value.exit_code == 2
    assert "\n" not in str(info.value)


def test_bool_in_int_setting_is_rejected(tmp_path):
    cfg = tmp_path / "c.toml"
    cfg.write_text("[run]\nworkers = true\n")
    with pytest.raises(UsageError, match="workers"):
        load(cfg)


def test_unknown_setting_in_file(tmp_path):
    cfg = tmp_path / "c.toml"
    cfg.write_text("[run]\nwrokers = 2\n")
    with pytest.raises(UsageError, match="wrokers"):
        load(cfg)


def test_missing_and_broken_config_files(tmp_path):
    with pytest.raises(UsageError, match="not found"):
        load(tmp_path / "none.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("[run\nworkers = \n")
    with pytest.raises(UsageError, match="config file"):
        load(bad)


def test_unrelated_env_is_ignored():
    s = load(env={"PIPELINE_NOT_A_SETTING": "x", "WORKERS": "9"})
    assert s.workers == Settings().workers


def test_fail_on_list_from_file(tmp_path):
    cfg = tmp_path / "c.toml"
    cfg.write_text('[run]\nfail_on = "invalid,error"\n')
    assert load(cfg).fail_on == ["invalid", "error"]
