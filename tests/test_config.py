"""Settings: CLI override > DORY_* environment > <corpus>/dory.toml > defaults, corpus discovery, and the
ranking policy loaded from dory.toml (checked by its effect on real searches)."""

from __future__ import annotations

from pathlib import Path

import pytest

from dory.config import IndexSettings, load_settings
from dory.errors import ConfigError, CorpusNotFound
from dory.models import ReindexRequest, SearchRequest
from dory.service import DoryService
from dory.service.settings import open_settings


def corpus(tmp_path: Path, toml: str | None = None, name: str = "corpus") -> Path:
    root = tmp_path / name
    root.mkdir()
    if toml is not None:
        (root / "dory.toml").write_text(toml, encoding="utf-8")
    return root


# -- precedence ----------------------------------------------------------------------------------
TOML = """
[index]
chunk_tokens = 100
chunk_overlap = 10
max_file_bytes = 5000
[search]
rrf_k = 30
"""


def test_each_layer_wins_over_the_next(tmp_path: Path) -> None:
    root = corpus(tmp_path, TOML)
    env = {"DORY_INDEX_CHUNK_TOKENS": "150", "DORY_INDEX_CHUNK_OVERLAP": "20"}
    settings = load_settings(root, {"index.chunk_tokens": 200}, env=env)
    assert settings.index.chunk_tokens == 200  # CLI override beats env and toml
    assert settings.index.chunk_overlap == 20  # env beats toml
    assert settings.index.max_file_bytes == 5000  # toml beats the default
    assert settings.search.rrf_k == 30
    assert settings.index.batch_files == IndexSettings().batch_files == 500  # default


def test_an_override_of_none_means_the_flag_was_not_given(tmp_path: Path) -> None:
    root = corpus(tmp_path, TOML)
    settings = load_settings(
        root, {"index.chunk_tokens": None, "state_dir": None}, env={"DORY_INDEX_CHUNK_TOKENS": "150"}
    )
    assert settings.index.chunk_tokens == 150
    assert settings.state_dir == root.resolve() / ".dory"


def test_empty_env_value_is_ignored(tmp_path: Path) -> None:
    root = corpus(tmp_path, TOML)
    assert load_settings(root, env={"DORY_INDEX_CHUNK_TOKENS": ""}).index.chunk_tokens == 100


def test_defaults_without_toml_or_env(tmp_path: Path) -> None:
    root = corpus(tmp_path)
    settings = load_settings(root, env={})
    assert settings.corpus == root.resolve()
    assert settings.index == IndexSettings()
    assert settings.embedder.backend == "minilm"
    assert settings.db_path == root.resolve() / ".dory" / "index.sqlite"
    assert settings.faiss_path == root.resolve() / ".dory" / "vectors.faiss"


def test_state_dir_from_env_and_flag(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = corpus(tmp_path)
    from_env = load_settings(root, env={"DORY_STATE_DIR": str(tmp_path / "state-env")})
    assert from_env.state_dir == tmp_path.resolve() / "state-env"
    from_flag = load_settings(
        root, {"state_dir": str(tmp_path / "state-flag")}, env={"DORY_STATE_DIR": str(tmp_path / "state-env")}
    )
    assert from_flag.state_dir == tmp_path.resolve() / "state-flag"
    monkeypatch.chdir(tmp_path)
    relative = load_settings(root, env={"DORY_STATE_DIR": "rel/state"})
    assert relative.state_dir == tmp_path.resolve() / "rel" / "state"


def test_state_dir_from_env_is_where_reindex_writes(tmp_path: Path) -> None:
    root = corpus(tmp_path)
    (root / "a.md").write_text("# A\napples")
    state = tmp_path / "elsewhere"
    svc = DoryService(load_settings(root, env={"DORY_STATE_DIR": str(state), "DORY_EMBEDDER_BACKEND": "none"}))
    try:
        svc.reindex(ReindexRequest())
    finally:
        svc.close()
    assert (state / "index.sqlite").is_file()
    assert not (root / ".dory").exists()


def test_list_values_from_env_are_comma_separated(tmp_path: Path) -> None:
    root = corpus(tmp_path, '[index]\nignore = ["toml/*"]\n')
    settings = load_settings(root, env={"DORY_INDEX_IGNORE": "a/*, b/*,,", "DORY_EMBEDDER_BACKEND": "none"})
    assert settings.index.ignore == ["a/*", "b/*"]  # env replaces the toml list


def test_ignore_globs_from_env_keep_files_out_of_the_index(tmp_path: Path) -> None:
    root = corpus(tmp_path)
    for rel in ("a/x.md", "b/y.md", "c/z.md"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(f"# {rel}\nshared word")
    svc = DoryService(load_settings(root, env={"DORY_INDEX_IGNORE": "a/*,b/*", "DORY_EMBEDDER_BACKEND": "none"}))
    try:
        assert svc.reindex(ReindexRequest()).new == 1
        assert [h.path for h in svc.search(SearchRequest(query="shared", mode="bm25")).hits] == ["c/z.md"]
    finally:
        svc.close()


@pytest.mark.parametrize(("value", "expected"), [("true", True), ("false", False), ("1", True), ("0", False)])
def test_boolean_env_values(tmp_path: Path, value: str, expected: bool) -> None:
    assert load_settings(corpus(tmp_path), env={"DORY_INDEX_TRIGRAM": value}).index.trigram is expected


def test_env_values_are_typed_by_the_setting(tmp_path: Path) -> None:
    settings = load_settings(
        corpus(tmp_path),
        env={
            "DORY_EMBEDDER_TIMEOUT_S": "2.5",
            "DORY_SEARCH_DEFAULT_K": "7",
            "DORY_EMBEDDER_URL": "http://127.0.0.1:9/v1",
        },
    )
    assert (settings.embedder.timeout_s, settings.search.default_k) == (2.5, 7)
    assert settings.embedder.url == "http://127.0.0.1:9/v1"


# -- invalid values ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("env", "fragment"),
    [
        ({"DORY_INDEX_CHUNK_TOKENS": "lots"}, "index.chunk_tokens: Input should be a valid integer"),
        ({"DORY_INDEX_CHUNK_TOKENS": "8"}, "index.chunk_tokens: Input should be greater than or equal to 32"),
        (
            {"DORY_EMBEDDER_BACKEND": "bogus"},
            "embedder.backend: Input should be 'minilm', 'openai', 'sentence-transformers' or 'none'",
        ),
        ({"DORY_SEARCH_RRF_K": "0"}, "search.rrf_k: Input should be greater than or equal to 1"),
        ({"DORY_INDEX_VECTOR_INDEX": "hnsw"}, "index.vector_index: Input should be 'auto', 'flat' or 'ivf'"),
        ({"DORY_INDEX_NO_SUCH": "1"}, "index.no_such: Extra inputs are not permitted"),
        ({"DORY_INDEX_TRIGRAM": "maybe"}, "index.trigram: Input should be a valid boolean"),
    ],
)
def test_invalid_env_value_is_a_config_error_naming_the_setting(
    tmp_path: Path, env: dict[str, str], fragment: str
) -> None:
    with pytest.raises(ConfigError) as info:
        load_settings(corpus(tmp_path), env=env)
    assert type(info.value) is ConfigError and info.value.code == "config_error"
    assert info.value.message.startswith("invalid settings: ")
    assert fragment in info.value.message


@pytest.mark.parametrize(
    ("toml", "fragment"),
    [
        ('[index]\nmax_file_bytes = "big"\n', "index.max_file_bytes: Input should be a valid integer"),
        ("[index]\nchunk_overlap = 9999\n", "index.chunk_overlap: Input should be less than or equal to 512"),
        ("[embedder]\nbatch_size = 0\n", "embedder.batch_size: Input should be greater than or equal to 1"),
        ("[search]\ncandidates = 5\n", "search.candidates: Input should be greater than or equal to 10"),
    ],
)
def test_invalid_toml_value_is_a_config_error_naming_the_setting(tmp_path: Path, toml: str, fragment: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_settings(corpus(tmp_path, toml), env={})
    assert fragment in info.value.message


@pytest.mark.parametrize("dotted", ["nosuch.key", "index", "index.", "corpus"])
def test_unknown_override_is_a_config_error(tmp_path: Path, dotted: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_settings(corpus(tmp_path), {dotted: 1}, env={})
    assert info.value.message == f"unknown setting {dotted!r}"
    assert info.value.details == {"setting": dotted}


def test_broken_toml_names_the_file(tmp_path: Path) -> None:
    root = corpus(tmp_path, "[index]\nchunk_tokens = = 3\n")
    with pytest.raises(ConfigError) as info:
        load_settings(root, env={})
    path = root.resolve() / "dory.toml"
    assert info.value.message.startswith(f"{path}: Invalid value (at line 2")
    assert info.value.details == {"path": str(path)}


def test_non_utf8_toml_names_the_file(tmp_path: Path) -> None:
    root = corpus(tmp_path)
    (root / "dory.toml").write_bytes(b"# caf\xe9\n[index]\n")
    with pytest.raises(ConfigError) as info:
        load_settings(root, env={})
    assert info.value.message.startswith(f"{root.resolve() / 'dory.toml'}: 'utf-8' codec can't decode byte 0xe9")


@pytest.mark.parametrize("toml", ["[indexer]\nx = 1\n", "state_dir = '/tmp/x'\n"])
def test_unknown_toml_section_names_the_file(tmp_path: Path, toml: str) -> None:
    root = corpus(tmp_path, toml)
    with pytest.raises(ConfigError) as info:
        load_settings(root, env={})
    key = toml.split("]")[0].lstrip("[") if toml.startswith("[") else "state_dir"
    assert info.value.message == f"{root.resolve() / 'dory.toml'}: unknown section [{key}]"


# -- corpus discovery ----------------------------------------------------------------------------
@pytest.mark.parametrize("marker", ["dory.toml", ".dory", "core"])
def test_cwd_with_a_corpus_marker_is_the_corpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, marker: str) -> None:
    root = corpus(tmp_path)
    if marker == "dory.toml":
        (root / marker).write_text("")
    else:
        (root / marker).mkdir()
    monkeypatch.chdir(root)
    assert load_settings(env={}).corpus == root.resolve()


def test_cwd_without_a_marker_is_corpus_not_found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = corpus(tmp_path)
    (root / "note.md").write_text("# a folder of notes, but not marked as a corpus")
    monkeypatch.chdir(root)
    with pytest.raises(CorpusNotFound) as info:
        load_settings(env={})
    assert info.value.code == "corpus_not_found" and info.value.exit_code == 2
    assert info.value.message == (
        "no corpus here: pass --corpus DIR, set DORY_CORPUS, or run `dory init DIR` to create one"
    )
    assert info.value.details == {"path": str(root)}


def test_dory_corpus_env_is_used_and_the_flag_beats_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    by_env, by_flag, cwd = corpus(tmp_path, name="env"), corpus(tmp_path, name="flag"), corpus(tmp_path, name="cwd")
    (cwd / "core").mkdir()  # the older marker counts only when nothing else names a corpus
    monkeypatch.chdir(cwd)
    assert load_settings(env={"DORY_CORPUS": str(by_env)}).corpus == by_env.resolve()
    assert load_settings(by_flag, env={"DORY_CORPUS": str(by_env)}).corpus == by_flag.resolve()
    assert load_settings(env={"DORY_CORPUS": ""}).corpus == cwd.resolve()  # empty means unset


def test_a_corpus_found_from_the_current_folder_beats_dory_corpus(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As git finds its repository: the nearest dory.toml or .dory/ at or above the current folder
    comes before DORY_CORPUS (issue 20's order)."""
    by_env, here = corpus(tmp_path, name="env"), corpus(tmp_path, "", "here")
    monkeypatch.chdir(here)
    assert load_settings(env={"DORY_CORPUS": str(by_env)}).corpus == here.resolve()


@pytest.mark.parametrize("kind", ["missing", "file"])
def test_named_corpus_that_is_not_a_folder_is_corpus_not_found(tmp_path: Path, kind: str) -> None:
    target = tmp_path / "target"
    if kind == "file":
        target.write_text("# a file")
    for corpus_arg, env in ((target, {}), (None, {"DORY_CORPUS": str(target)})):
        with pytest.raises(CorpusNotFound) as info:
            load_settings(corpus_arg, env=env)
        expected = (
            f"{target} is a file, not a corpus folder" if kind == "file" else f"corpus folder does not exist: {target}"
        )
        assert info.value.message == expected


# -- ranking policy from dory.toml ---------------------------------------------------------------
NOTES = {
    "inbox/capture.md": "# Capture\nthe walrus migrates north in spring\n",
    "knowledge/walrus.md": "# Walrus facts\nA walrus can weigh over a tonne.\n",
    "ideas/walrus-book.md": "# Book idea\nA children's book about a walrus.\n",
}


def policy_service(tmp_path: Path, toml: str) -> DoryService:
    root = corpus(tmp_path, toml)
    for rel, text in NOTES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    svc = DoryService(open_settings(root, env={"DORY_EMBEDDER_BACKEND": "none"}))
    svc.reindex(ReindexRequest())
    return svc


def walrus_paths(svc: DoryService) -> list[str]:
    try:
        return [h.path for h in svc.search(SearchRequest(query="walrus", mode="bm25", debug=True)).hits]
    finally:
        svc.close()


def test_without_overrides_inbox_notes_are_found(tmp_path: Path) -> None:
    assert "inbox/capture.md" in walrus_paths(policy_service(tmp_path, ""))


def test_policy_rule_with_factor_zero_hides_inbox_notes(tmp_path: Path) -> None:
    toml = '[[search.policy]]\nname = "inbox"\npath = "inbox/*"\nfactor = 0\n'
    paths = walrus_paths(policy_service(tmp_path, toml))
    assert sorted(paths) == ["ideas/walrus-book.md", "knowledge/walrus.md"]


def test_added_policy_rule_lifts_a_folder_to_the_top(tmp_path: Path) -> None:
    toml = '[[search.policy]]\nname = "ideas-first"\npath = "ideas/*"\nfactor = 5\n'
    svc = policy_service(tmp_path, toml)
    try:
        hits = svc.search(SearchRequest(query="walrus", mode="bm25", debug=True)).hits
    finally:
        svc.close()
    assert hits[0].path == "ideas/walrus-book.md"
    assert hits[0].explain is not None and hits[0].explain.policy_rules == ["ideas-first"]
    assert hits[0].explain.policy_factor == 5.0


def test_policy_rule_on_a_frontmatter_field(tmp_path: Path) -> None:
    root_toml = '[[search.policy]]\nname = "drafts-out"\nfield = "status"\nvalues = ["draft"]\nfactor = 0\n'
    svc = policy_service(tmp_path, root_toml)
    (svc.settings.corpus / "knowledge/walrus.md").write_text("---\nstatus: Draft\n---\n# Walrus facts\nwalrus\n")
    svc.reindex(ReindexRequest())
    assert "knowledge/walrus.md" not in walrus_paths(svc)


@pytest.mark.parametrize(
    ("rule", "message"),
    [
        ('name = "x"\npath = "a/*"\nfactor = -1', "search.policy rule 'x': factor must be a number ≥ 0"),
        ('name = "x"\npath = "a/*"\nfactor = "big"', "search.policy rule 'x': factor must be a number ≥ 0"),
        ('path = "a/*"\nfactor = 1', "search.policy: every rule needs a name"),
        ('name = "x"\nfactor = 1', "search.policy rule 'x': give a path glob or a field"),
        (
            'name = "x"\nfield = "colour"\nfactor = 1',
            "search.policy rule 'x': field must be one of status, type, canonical, source_kind, "
            "superseded_by, visibility",
        ),
        ('name = "x"\npath = "a/*"\nfactor = 1\nweight = 2', "search.policy: unknown keys ['weight']"),
    ],
)
def test_invalid_policy_rule_is_a_config_error(tmp_path: Path, rule: str, message: str) -> None:
    """Rules are checked when settings load, so every command (reindex, status, search) refuses them."""
    root = corpus(tmp_path, f"[[search.policy]]\n{rule}\n")
    with pytest.raises(ConfigError) as info:
        open_settings(root, env={"DORY_EMBEDDER_BACKEND": "none"})
    assert info.value.message == message and info.value.exit_code == 2


def test_policy_that_is_not_a_list_of_tables_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        open_settings(corpus(tmp_path, '[search]\npolicy = "inbox=0"\n'), env={})
    assert "search.policy: Input should be a valid list" in info.value.message
