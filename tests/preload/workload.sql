-- A deterministic sqlite3 workload for the preload tests.
PRAGMA cache_size = -20000;
CREATE TABLE t(id INTEGER PRIMARY KEY, grp INTEGER, name TEXT, payload BLOB);
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 200000)
INSERT INTO t SELECT i, i % 113, 'name-' || i, zeroblob(i % 500) FROM n;
CREATE INDEX t_grp ON t(grp, name);
SELECT grp, count(*), sum(length(payload)), min(name), max(name) FROM t GROUP BY grp ORDER BY grp LIMIT 10;
SELECT count(DISTINCT name), total(id) FROM t WHERE grp BETWEEN 10 AND 50;
UPDATE t SET name = upper(name) WHERE id % 7 = 0;
DELETE FROM t WHERE id % 11 = 0;
SELECT count(*), sum(id), group_concat(name, ',') FILTER (WHERE id < 30) FROM t;
VACUUM;
SELECT count(*) FROM t;
