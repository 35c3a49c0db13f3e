"""Configuration: sources and their precedence, the properties syntax, validation messages."""

from __future__ import annotations

from pathlib import Path

import pytest

from coordinator.config import SETTINGS, ConfigError, Listener, load_config, main, markdown_table, read_properties


def load(tmp_path: Path | None = None, file_text: str | None = None, env: dict[str, str] | None = None,
         overrides: tuple[str, ...] = ()):
    file = None
    if file_text is not None:
        file = tmp_path / "server.properties"
        file.write_text(file_text, encoding="latin-1")
    return load_config(file, overrides, environ=env or {})


def test_defaults_are_kafkas():
    config = load()
    assert config["listeners"] == (Listener("PLAINTEXT", "127.0.0.1", 9092),)
    assert config["advertised.listeners"] is None
    assert config.advertised_listener == Listener("PLAINTEXT", "127.0.0.1", 9092)
    assert config["log.dirs"] == Path("./data")
    assert (config["node.id"], config["num.partitions"], config["default.replication.factor"]) == (0, 1, 1)
    assert config["auto.create.topics.enable"] is True
    assert config["socket.request.max.bytes"] == 104857600
    assert config["connections.max.idle.ms"] == 600000
    assert config["offsets.topic.num.partitions"] == 50
    assert config["offsets.retention.minutes"] == 10080
    assert config["offset.metadata.max.bytes"] == 4096
    assert config["group.initial.rebalance.delay.ms"] == 3000
    assert (config["group.min.session.timeout.ms"], config["group.max.session.timeout.ms"]) == (6000, 1800000)
    assert config["group.max.size"] == 2147483647
    assert config["flush.policy"] == "always" and config["log.level"] == "INFO"
    assert all(config.source(s.name) == "default" for s in SETTINGS)


def test_file_env_and_override_precedence(tmp_path):
    config = load(tmp_path, "num.partitions=2\nnode.id=2\ngroup.max.size=2\n",
                  env={"GROUPCOORD_NODE_ID": "3", "GROUPCOORD_GROUP_MAX_SIZE": "3", "PATH": "/bin"},
                  overrides=("group.max.size=4",))
    assert (config["num.partitions"], config["node.id"], config["group.max.size"]) == (2, 3, 4)
    assert config.source("num.partitions").startswith("file ")
    assert config.source("node.id") == "env GROUPCOORD_NODE_ID"
    assert config.source("group.max.size") == "--override"


def test_env_names_are_capitals_with_underscores():
    config = load(env={"GROUPCOORD_LOG_DIRS": "/var/lib/gc", "GROUPCOORD_GROUP_INITIAL_REBALANCE_DELAY_MS": "0"})
    assert config["log.dirs"] == Path("/var/lib/gc")
    assert config["group.initial.rebalance.delay.ms"] == 0


def test_later_overrides_win():
    assert load(overrides=("num.partitions=2", "num.partitions=5"))["num.partitions"] == 5


def test_override_value_may_contain_equals_signs():
    config = load(overrides=("advertised.listeners=PLAINTEXT://h:1",))
    assert config["advertised.listeners"] == (Listener("PLAINTEXT", "h", 1),)


def test_typed_attribute_access_and_immutability():
    config = load(overrides=("num.partitions=7",))
    assert config.num_partitions == 7 and config.get("num.partitions") == 7
    assert config.auto_create_topics_enable is True
    with pytest.raises(AttributeError, match=r"no setting named 'no\.such'"):
        config.no_such  # noqa: B018
    with pytest.raises(AttributeError):
        config.num_partitions = 8
    with pytest.raises(TypeError):
        config["num.partitions"] = 8  # type: ignore[index]


def test_broker_id_is_an_alias_of_node_id(tmp_path):
    assert load(tmp_path, "broker.id=4\n")["node.id"] == 4
    assert load(env={"GROUPCOORD_BROKER_ID": "6"})["node.id"] == 6


@pytest.mark.parametrize("override, message", [
    ("listeners=foo", "listeners: expected PLAINTEXT://host:port, got 'foo'"),
    ("listeners=SSLX://h:9093", "named by its security protocol"),
    ("listeners=PLAINTEXT://h:70000", "listeners: expected PLAINTEXT://host:port"),
    ("listeners=", "at least one listener is required"),
    ("advertised.listeners=PLAINTEXT://0.0.0.0:9092", "cannot advertise the wildcard address"),
    ("num.partitions=0", "num.partitions: must be at least 1, got 0"),
    ("num.partitions=x", "num.partitions: expected an integer, got 'x'"),
    ("default.replication.factor=3", "default.replication.factor: must be at most 1"),
    ("auto.create.topics.enable=yes", "auto.create.topics.enable: expected true or false, got 'yes'"),
    ("flush.policy=sometimes", "flush.policy: expected one of always, interval, got 'sometimes'"),
    ("log.dirs=/a,/b", "log.dirs: only one directory is supported"),
    ("log.level=LOUD", "log.level: expected one of DEBUG, INFO, WARNING, ERROR"),
    ("no.such.setting=1", "unknown setting 'no.such.setting'"),
    ("num.partitions", "--override expects name=value"),
    ("=1", "--override expects name=value"),
])
def test_bad_values_name_the_setting_and_what_is_allowed(override, message):
    with pytest.raises(ConfigError) as caught:
        load(overrides=(override,))
    assert message in str(caught.value)


def test_error_says_where_the_bad_value_came_from(tmp_path):
    with pytest.raises(ConfigError, match=r"num.partitions: .* \(from file .*server.properties\)"):
        load(tmp_path, "num.partitions=-3\n")
    with pytest.raises(ConfigError, match=r"\(from env GROUPCOORD_NUM_PARTITIONS\)"):
        load(env={"GROUPCOORD_NUM_PARTITIONS": "lots"})


def test_unknown_name_in_file_stops_loading(tmp_path):
    with pytest.raises(ConfigError, match=r"unknown setting 'zookeeper\.connect'"):
        load(tmp_path, "zookeeper.connect=localhost:2181\n")


def test_unknown_groupcoord_environment_variable_stops_loading():
    with pytest.raises(ConfigError, match="unknown environment setting GROUPCOORD_NUM_PARTITON"):
        load(env={"GROUPCOORD_NUM_PARTITON": "3"})


def test_session_timeout_bounds_must_be_ordered():
    with pytest.raises(ConfigError, match=r"group\.min\.session\.timeout\.ms .* must not exceed"):
        load(overrides=("group.min.session.timeout.ms=10000", "group.max.session.timeout.ms=5000"))


def test_missing_config_file_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="cannot read config file"):
        load_config(tmp_path / "absent.properties", environ={})


def test_listeners_accept_lists_ipv6_and_wildcards():
    config = load(overrides=("listeners=PLAINTEXT://0.0.0.0:9092, PLAINTEXT://[::1]:9093",))
    assert config["listeners"] == (Listener("PLAINTEXT", "0.0.0.0", 9092), Listener("PLAINTEXT", "::1", 9093))
    assert config.advertised_listener == Listener("PLAINTEXT", "127.0.0.1", 9092)
    assert config.raw("listeners") == "PLAINTEXT://0.0.0.0:9092,PLAINTEXT://[::1]:9093"


def test_log_level_is_case_insensitive():
    assert load(env={"GROUPCOORD_LOG_LEVEL": "debug"})["log.level"] == "DEBUG"


# ---- the properties syntax (java.util.Properties.load)

def test_properties_comments_separators_and_blank_lines():
    text = "# comment\n! also a comment\n\n  a=1\nb : 2\nc 3\nd\ne\t=\t 4 \n   # indented comment\n"
    assert read_properties(text) == {"a": "1", "b": "2", "c": "3", "d": "", "e": "4 "}


def test_properties_line_continuations():
    text = "listeners=PLAINTEXT://a:1,\\\n    PLAINTEXT://b:2\nx=ends with backslash\\\\\ny=1\n"
    assert read_properties(text) == {"listeners": "PLAINTEXT://a:1,PLAINTEXT://b:2",
                                     "x": "ends with backslash\\", "y": "1"}


def test_properties_continuation_at_end_of_file():
    assert read_properties("a=1\\") == {"a": "1"}


def test_properties_escapes():
    text = "key\\=with\\:seps = v\\tw\nu=\\u0041\\u00e9\nother=\\q\n"
    assert read_properties(text) == {"key=with:seps": "v\tw", "u": "Aé", "other": "q"}


def test_properties_comment_line_ending_in_backslash_does_not_continue():
    assert read_properties("# note \\\na=1\n") == {"a": "1"}


def test_properties_file_values_are_parsed(tmp_path):
    config = load(tmp_path, "listeners = PLAINTEXT://127.0.0.1:19092\nlog.dirs=/tmp/x\\\n/y\n")
    assert config["listeners"][0].port == 19092
    assert config["log.dirs"] == Path("/tmp/x/y")


# ---- the README table

def test_markdown_table_has_a_row_per_setting_with_env_name_and_default():
    lines = markdown_table().splitlines()
    assert len(lines) == 2 + len(SETTINGS)
    assert "| `log.dirs` | `GROUPCOORD_LOG_DIRS` | `./data` | directory path |" in markdown_table()
    assert "| `flush.policy` | `GROUPCOORD_FLUSH_POLICY` | `always` | always \\| interval |" in markdown_table()


def test_config_module_prints_the_table(capsys):
    assert main(["--markdown"]) == 0
    assert capsys.readouterr().out == markdown_table() + "\n"
    assert main([]) == 2


def test_secrets_are_known_and_never_shown_by_the_config():
    from coordinator.config import HIDDEN, is_sensitive
    from coordinator.logging import hide_secrets

    assert is_sensitive("ssl.key.password") and not is_sensitive("ssl.keystore.location")
    # Kafka's PASSWORD names we do not define, also under a listener prefix
    assert is_sensitive("listener.name.sasl_ssl.plain.sasl.jaas.config") and is_sensitive("ssl.truststore.password")
    config = load_config(overrides=["ssl.key.password=hunter2", "num.partitions=3"], environ={})
    assert config.loggable() == {"ssl.key.password": HIDDEN, "num.partitions": "3"}
    assert "hunter2" not in repr(config)
    event = hide_secrets(None, "info", {"event": "e", "ssl_key_password": "hunter2", "port": 1})
    assert event == {"event": "e", "ssl_key_password": HIDDEN, "port": 1}
    with pytest.raises(ConfigError) as typo:
        load_config(overrides=["ssl.key.password:hunter2"], environ={})
    assert "hunter2" not in str(typo.value)
