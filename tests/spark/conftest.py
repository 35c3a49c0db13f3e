"""One local SparkSession for every test here (a JVM start costs 10-20 s on this machine)."""

from __future__ import annotations

import pytest

pytest.importorskip("pyspark", reason="the spark extra is installed by `make test`")
pytest.importorskip("pyarrow", reason="Spark's Python data sources need pyarrow (the spark extra)")


@pytest.fixture(scope="session")
def spark_session():
    from spark_jobs.reader import local_session

    session = local_session("local[2]", app_name="groupcoord-tests", **{"spark.sql.shuffle.partitions": "4"})
    yield session
    session.stop()
