"""The cache of compiled codec code that spares each start most of the protocol import."""

from __future__ import annotations

import marshal

from protocol import messages


def test_cached_code_is_used_again_and_a_changed_source_is_compiled_afresh(tmp_path, monkeypatch):
    monkeypatch.setattr(messages.sys, "dont_write_bytecode", False)
    cache = messages._CodeCache()
    cache.path = tmp_path / "codecs.marshal"
    code = cache.compile("x = 1\n", "<codec T>")
    cache.save()

    again = messages._CodeCache()
    again.path = cache.path
    again.entries = marshal.loads(cache.path.read_bytes())
    assert again.compile("x = 1\n", "<codec T>") == code
    assert not again.missed
    namespace: dict[str, int] = {}
    exec(again.compile("x = 2\n", "<codec T>"), namespace)
    assert again.missed and namespace["x"] == 2


def test_nothing_is_written_when_bytecode_writing_is_off(tmp_path, monkeypatch):
    monkeypatch.setattr(messages.sys, "dont_write_bytecode", True)
    cache = messages._CodeCache()
    cache.path = tmp_path / "codecs.marshal"
    cache.compile("y = 1\n", "<codec T>")
    cache.save()
    assert not cache.path.exists()


def test_an_unreadable_cache_file_only_means_compiling(tmp_path, monkeypatch):
    monkeypatch.setattr(messages.Path, "with_name", lambda self, name: tmp_path)
    messages._CodeCache().path.write_bytes(b"not marshal data")
    cache = messages._CodeCache()
    assert cache.path.parent == tmp_path and cache.entries == {}
    namespace: dict[str, int] = {}
    exec(cache.compile("z = 3\n", "<codec T>"), namespace)
    assert namespace["z"] == 3
