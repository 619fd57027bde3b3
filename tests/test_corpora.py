"""Which corpus a command means (dory.corpora): the folders above the current one, DORY_CORPUS, the
user's corpora.toml and its default, names and paths; and where each resolved setting came from."""

from __future__ import annotations

from pathlib import Path

import pytest

from dory.config import SECTIONS, load_settings, resolve_settings
from dory.corpora import UserConfig
from dory.errors import ConfigError, CorpusNotFound
from dory.service.corpora import add_corpus, config_report


def folder(path: Path, *markers: str) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    for marker in markers:
        if marker.endswith("/"):
            (path / marker).mkdir()
        else:
            (path / marker).write_text("", encoding="utf-8")
    return path


def user(tmp_path: Path, **more: str) -> dict[str, str]:
    """An environment whose user config, data and state folders are under tmp_path."""
    return {
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "XDG_STATE_HOME": str(tmp_path / "state"),
        **more,
    }


def corpora_toml(env: dict[str, str], text: str) -> Path:
    path = Path(env["XDG_CONFIG_HOME"]) / "dory" / "corpora.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


# -- walking up ----------------------------------------------------------------------------------
@pytest.mark.parametrize("marker", ["dory.toml", ".dory/"])
def test_a_corpus_is_found_from_any_folder_below_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, marker: str
) -> None:
    root = folder(tmp_path / "notes", marker)
    deep = folder(root / "projects" / "alpha" / "drafts")
    monkeypatch.chdir(deep)
    resolved = resolve_settings(env=user(tmp_path))
    assert resolved.settings.corpus == root.resolve()
    assert resolved.sources["corpus"] == f"found from {deep.resolve()} (it holds {marker})"
    assert resolved.settings.state_dir == root.resolve() / ".dory"  # a corpus Dory owns, as before


def test_the_nearest_marked_folder_wins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    outer = folder(tmp_path / "outer", "dory.toml")
    inner = folder(outer / "inner", ".dory/")
    monkeypatch.chdir(folder(inner / "sub"))
    assert load_settings(env=user(tmp_path)).corpus == inner.resolve()


def test_core_counts_only_in_the_current_folder_and_after_everything_else(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A code repository has `core/` too: above the current folder it names no corpus."""
    repo = folder(tmp_path / "repo", "core/")
    monkeypatch.chdir(folder(repo / "src"))
    with pytest.raises(CorpusNotFound):
        load_settings(env=user(tmp_path))
    other = folder(tmp_path / "other", "dory.toml")
    monkeypatch.chdir(repo)
    assert load_settings(env=user(tmp_path, DORY_CORPUS=str(other))).corpus == other.resolve()
    assert load_settings(env=user(tmp_path)).corpus == repo.resolve()


# -- the user's corpora ----------------------------------------------------------------------------
def test_an_added_vault_is_found_by_name_by_path_from_inside_and_as_the_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = user(tmp_path)
    vault = folder(tmp_path / "Obsidian" / "Main")
    added = add_corpus(str(vault), env=env)
    assert (added["name"], added["default"]) == ("main", True)
    monkeypatch.chdir(folder(tmp_path / "elsewhere"))
    for how in (load_settings("main", env=env), load_settings(str(vault), env=env), load_settings(env=env)):
        assert (how.corpus, how.name, how.read_only, how.owned) == (vault.resolve(), "main", True, False)
        assert how.state_dir == tmp_path / "state" / "dory" / "main"
        assert how.output_root == tmp_path / "data" / "dory" / "main"
    monkeypatch.chdir(folder(vault / "Daily"))
    assert resolve_settings(env=env).sources["corpus"].startswith("the known corpus 'main', found from")
    monkeypatch.chdir(tmp_path / "elsewhere")
    assert load_settings(env={**env, "DORY_CORPUS": "main"}).name == "main"


def test_state_dir_flag_and_env_still_win_for_an_added_vault(tmp_path: Path) -> None:
    env = user(tmp_path)
    vault = folder(tmp_path / "vault")
    add_corpus(str(vault), env=env)
    assert load_settings("vault", {"state_dir": str(tmp_path / "flag")}, env=env).state_dir == tmp_path / "flag"
    by_env = load_settings("vault", env={**env, "DORY_STATE_DIR": str(tmp_path / "env")})
    assert by_env.state_dir == tmp_path / "env"


def test_a_folder_of_that_name_here_wins_over_a_known_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    env = user(tmp_path)
    add_corpus(str(folder(tmp_path / "a" / "notes")), env=env)
    here = folder(tmp_path / "b")
    local = folder(here / "notes", "dory.toml")
    monkeypatch.chdir(here)
    assert load_settings("notes", env=env).corpus == local.resolve()


def test_an_unknown_name_lists_the_known_ones(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    env = user(tmp_path)
    add_corpus(str(folder(tmp_path / "vault")), env=env)
    monkeypatch.chdir(folder(tmp_path / "elsewhere"))
    with pytest.raises(CorpusNotFound) as info:
        load_settings("notes", env=env)
    assert info.value.message == (
        f"corpus folder does not exist: notes (nor is a corpus named 'notes' in "
        f"{tmp_path / 'config' / 'dory' / 'corpora.toml'}: vault)"
    )


def test_a_known_corpus_whose_folder_is_gone_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    env = user(tmp_path)
    vault = folder(tmp_path / "vault")
    add_corpus(str(vault), env=env)
    vault.rmdir()
    monkeypatch.chdir(folder(tmp_path / "elsewhere"))
    with pytest.raises(CorpusNotFound) as info:
        load_settings(env=env)  # the default
    assert info.value.message == f"the folder of corpus 'vault' is gone: {vault} (fix its path in corpora.toml)"


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("[corpora.notes\n", "Expected ']'"),
        ("[corpora.notes]\noutput = false\n", 'needs path = "<folder>"'),
        ("[corpora.notes]\npath = '/x'\nwritable = 'yes'\n", "writable is true or false"),
        ("[corpora.notes]\npath = '/x'\noutput = 3\n", "output is a folder, or false"),
        ("[corpora.'my notes']\npath = '/x'\n", "a corpus name is letters, digits"),
        ("default = 'nope'\n[corpora.notes]\npath = '/x'\n", "default names no corpus: 'nope'"),
    ],
)
def test_a_broken_corpora_toml_is_a_config_error_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str, problem: str
) -> None:
    env = user(tmp_path)
    path = corpora_toml(env, text)
    monkeypatch.chdir(folder(tmp_path / "elsewhere"))
    with pytest.raises(ConfigError) as info:
        load_settings(env=env)
    assert info.value.message.startswith(str(path)) and problem in info.value.message, info.value.message


def test_sections_of_an_entry_apply_to_that_corpus_and_beat_its_dory_toml(tmp_path: Path) -> None:
    env = user(tmp_path)
    vault = folder(tmp_path / "vault")
    (vault / "dory.toml").write_text("[search]\ndefault_k = 7\nrrf_k = 30\n", encoding="utf-8")
    path = corpora_toml(
        env, f'[corpora.vault]\npath = "{vault}"\noutput = false\n\n[corpora.vault.search]\nrrf_k = 40\n'
    )
    resolved = resolve_settings("vault", {"search.candidates": 99}, env={**env, "DORY_SEARCH_LEXICAL_WEIGHT": "2"})
    s, sources = resolved.settings, resolved.sources
    assert (s.search.default_k, s.search.rrf_k, s.search.lexical_weight, s.search.candidates) == (7, 40, 2.0, 99)
    assert sources["search.default_k"] == str(vault.resolve() / "dory.toml")
    assert sources["search.rrf_k"] == f"{path} [corpora.vault]"
    assert sources["search.lexical_weight"] == "env DORY_SEARCH_LEXICAL_WEIGHT"
    assert sources["search.candidates"] == "command line"
    assert s.output_root is None and s.read_only
    with pytest.raises(ConfigError, match=r"unknown section \[serach\]"):
        corpora_toml(env, f'[corpora.vault]\npath = "{vault}"\n[corpora.vault.serach]\nx = 1\n')
        load_settings("vault", env=env)


def test_config_show_lists_every_setting_with_its_source(tmp_path: Path) -> None:
    env = user(tmp_path, DORY_EMBEDDER_BACKEND="none", DORY_LLM_API_KEY="sk-secret")
    vault = folder(tmp_path / "vault")
    add_corpus(str(vault), env=env)
    report = config_report("vault", {"state_dir": None, "daemon.log_level": "debug"}, env)
    rows = {row["key"]: (row["value"], row["source"]) for row in report["settings"]}
    entry = f"{tmp_path / 'config' / 'dory' / 'corpora.toml'} [corpora.vault]"
    assert rows["corpus"] == (str(vault.resolve()), f"--corpus 'vault' in {tmp_path / 'config/dory/corpora.toml'}")
    assert rows["read_only"] == (True, entry) and rows["state_dir"][1] == entry
    assert rows["embedder.backend"] == ("none", "env DORY_EMBEDDER_BACKEND")
    assert rows["daemon.log_level"] == ("debug", "command line")
    assert rows["index.chunk_tokens"] == (220, "default")
    assert rows["llm.api_key"] == ("***", "env DORY_LLM_API_KEY")  # never the secret itself
    every = {f"{name}.{key}" for name, section in SECTIONS.items() for key in section.model_fields}
    assert every <= set(rows), every - set(rows)  # every setting of every section


def test_the_user_config_without_a_file_is_empty(tmp_path: Path) -> None:
    config = UserConfig.load(user(tmp_path))
    assert (config.default, config.corpora) == (None, {})


def test_adding_to_a_broken_corpora_toml_refuses_and_leaves_it_as_it_was(tmp_path: Path) -> None:
    env = user(tmp_path)
    path = corpora_toml(env, "[corpora.notes\npath = 'x'\n")
    before = path.read_bytes()
    with pytest.raises(ConfigError) as info:
        add_corpus(str(folder(tmp_path / "vault")), env=env)
    assert info.value.code == "config_error" and info.value.message.startswith(str(path))
    assert path.read_bytes() == before
