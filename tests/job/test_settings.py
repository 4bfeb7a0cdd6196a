"""Settings: defaults in pipeline.job.settings.Settings, layered by the command line (click):
default < --config FILE < PIPELINE_<NAME> < flag; and the checks of each layer.

Each run's effective settings are read back from its manifest.
"""

from __future__ import annotations

import json

import pytest
from conftest import LEET, PUZZLE, REPO, invoke

from pipeline.errors import UsageError
from pipeline.job.settings import DEFAULTS, Settings


@pytest.fixture
def settings_of(tmp_path):
    """settings_of(*flags, env={...}) -> the effective settings of a real (tiny) run."""
    (tmp_path / "p.txt").write_text(PUZZLE + "\n")
    count = [0]

    def run(*flags: str, env: dict[str, str] | None = None):
        count[0] += 1
        out = tmp_path / f"o{count[0]}"
        res = invoke(["run", "-i", "p.txt", "-o", str(out), "-q", *map(str, flags)], env=env,
                     cwd=tmp_path)
        if res.returncode not in (0, 1):
            return res
        return json.loads((out / "manifest.json").read_text())["config"]

    return run


def test_defaults(settings_of):
    assert settings_of() == Settings().as_dict() == DEFAULTS.as_dict()


def test_precedence(settings_of, tmp_path):
    cfg = tmp_path / "c.toml"
    cfg.write_text("[run]\nworkers = 1\nchunk_size = 111\nfail_on = ['invalid']\n"
                   "log_level = 'debug'\n")
    s = settings_of("-c", cfg)
    assert (s["workers"], s["chunk_size"], s["fail_on"], s["log_level"]) == (
        1, 111, ["invalid"], "DEBUG")
    s = settings_of("-c", cfg, env={"PIPELINE_CHUNK_SIZE": "5", "PIPELINE_FAIL_ON":
                                    "error, unsolvable"})
    assert (s["workers"], s["chunk_size"], s["fail_on"]) == (1, 5, ["error", "unsolvable"])
    s = settings_of("-c", cfg, "--chunk-size", "7", env={"PIPELINE_CHUNK_SIZE": "5"})
    assert s["chunk_size"] == 7


def test_config_file_without_run_table(settings_of, tmp_path):
    (tmp_path / "flat.toml").write_text("chunk_size = 9\ncanonical = true\n")
    s = settings_of("-c", tmp_path / "flat.toml")
    assert s["chunk_size"] == 9 and s["canonical"] is True


def test_empty_env_value_is_ignored(settings_of):
    assert settings_of(env={"PIPELINE_CHUNK_SIZE": ""})["chunk_size"] == DEFAULTS.chunk_size


@pytest.mark.parametrize("raw, value", [("1", True), ("yes", True), ("ON", True),
                                        ("false", False), ("0", False), ("off", False)])
def test_bool_from_the_environment(settings_of, raw, value):
    assert settings_of(env={"PIPELINE_FIRST_SOLUTION": raw})["first_solution"] is value


def test_scheduler_from_dask_or_our_variable_or_the_flag(settings_of):
    # With local in the same layer as the scheduler (or a lower one) a scheduler is refused,
    # naming the address that won.
    def winner(*flags, env):
        res = settings_of(*flags, env={**env, "PIPELINE_EXECUTOR": "local"})
        assert res.returncode == 2
        return res.stderr.split("--scheduler ")[1].split(":", 2)[:2]

    dask = {"DASK_SCHEDULER_ADDRESS": "tcp://dask:1"}
    assert winner(env=dask) == ["tcp", "//dask"]
    ours = {**dask, "PIPELINE_SCHEDULER": "tcp://ours:2"}
    assert winner(env=ours) == ["tcp", "//ours"]
    assert winner("--scheduler", "tcp://flag:3", env=ours) == ["tcp", "//flag"]


@pytest.mark.parametrize("flags, env, words", [
    (["--workers", "-1"], {}, "-1"),
    (["--chunk-size", "0"], {}, "0"),
    ([], {"PIPELINE_CHUNK_SIZE": "many"}, "many"),
    (["--executor", "bogus"], {}, "bogus"),
    (["--log-level", "loud"], {}, "loud"),
    (["--fail-on", "solved,nope"], {}, "nope"),
    ([], {"PIPELINE_LIMIT": "-3"}, "-3"),
])
def test_bad_values_are_usage_errors(settings_of, flags, env, words):
    res = settings_of(*flags, env=env)
    assert res.returncode == 2 and words in res.stderr


@pytest.mark.parametrize("text, words", [
    ("[run]\nworkers = true\n", "workers = True is not an integer"),
    ("[run]\nstall_timeout = \"long\"\n", "stall_timeout = 'long' is not a number"),
    ("[run]\ncanonical = 1\n", "canonical = 1 is not true or false"),
    ("[run]\nexecutor = 2\n", "executor = 2 is not a string"),
    ("[run]\nfail_on = 3\n", "fail_on = 3 is not a list or a comma-separated string"),
    ("[run]\nbogus = 1\n", "unknown setting(s): bogus"),
    ("[run\n", "config file"),
    # a value out of range is the file's (click blamed --chunk-size and its variable)
    ("[run]\nchunk_size = 0\n", "bad.toml: chunk size must be 1 to"),
    ("[run]\ncompression = \"gzip\"\n", "bad.toml: --compression: 'gzip' is not one of"),
    ("[run]\nlog_level = \"TRACE\"\n", "bad.toml: --log-level: 'TRACE' is not one of"),
    ("[run]\nfail_on = [\"x\"]\n", "bad.toml: --fail-on: unknown status 'x'"),
    ("limit = 2\n[run]\nworkers = 1\n", "outside its [run] table: limit"),  # was ignored
])
def test_bad_config_files(settings_of, tmp_path, text, words):
    (tmp_path / "bad.toml").write_text(text)
    res = settings_of("-c", tmp_path / "bad.toml")
    assert res.returncode == 2 and words in res.stderr, res.stderr
    assert "PIPELINE_" not in res.stderr  # no variable was set: none is blamed
    res = settings_of("-c", tmp_path / "missing.toml")
    assert res.returncode == 2 and "not found" in res.stderr


def test_the_library_checks_too():
    with pytest.raises(UsageError, match="workers"):
        Settings(workers=-1)
    with pytest.raises(UsageError, match="unknown status"):
        Settings(fail_on=["bogus"])
    assert Settings(fail_on="error, invalid").fail_on == ["error", "invalid"]
    assert Settings().solution_limit == 2 and Settings(first_solution=True).solution_limit == 1
    assert Settings(workers=3).worker_count() == 3 and Settings().worker_count() >= 1


def test_the_example_config_files_are_valid():

    from pipeline.job.settings import read_config_file

    examples = sorted((REPO / "configs").glob("*.toml"))
    assert examples
    for path in examples:
        Settings(**read_config_file(path))


@pytest.mark.parametrize("name, value, words", [
    ("rate_budget", 1.5, "an integer"), ("rate_budget", True, "an integer"),
    ("rate_budget", "100", "an integer"), ("rate_budget", None, "an integer"),
    ("workers", 2.0, "an integer"), ("rate", 1, "true or false"),
    ("stall_timeout", True, "a number"), ("output", 3, "a string")])
def test_the_library_refuses_a_value_of_another_kind(name, value, words):
    """Found by a helper: Settings(rate=True, rate_budget=1.5) was taken, and every row of
    the run became `error` (the workers refused the budget) with exit 0."""
    with pytest.raises(UsageError, match=f"{name} must be {words}"):
        Settings(**{name: value})


def test_numpy_numbers_and_paths_are_taken_as_python_ones(tmp_path):
    """Found by a helper: rate_budget=np.int64(100) went to the manifest as "100", and the
    same call again was refused as "a different run" (so no rerun, no resume)."""
    import numpy as np

    from pipeline import run

    s = Settings(workers=np.int32(1), rate=np.bool_(True), rate_budget=np.int64(100),
                 stall_timeout=np.float32(30), folder=tmp_path / "out")
    assert s.as_dict() == Settings(workers=1, rate=True, rate_budget=100, stall_timeout=30.0,
                                   folder=str(tmp_path / "out")).as_dict()
    assert [type(getattr(s, n)) for n in ("workers", "rate", "rate_budget", "stall_timeout",
                                          "folder")] == [int, bool, int, float, str]
    (tmp_path / "p.txt").write_text(LEET + "\n")
    for _ in range(2):  # the second: "already done", not "a different run"
        got = run(Settings(inputs=[tmp_path / "p.txt"], folder=tmp_path / "out", workers=1,
                           rate=True, rate_budget=np.int64(100), quiet=True))
        assert got.exit_code == 0
