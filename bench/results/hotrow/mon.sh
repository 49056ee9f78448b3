#!/bin/bash
# mon.sh PORT OUT: every second, table update stats + non-idle sessions' xmin
while true; do
  psql -X -At -h 127.0.0.1 -p $1 -U postgres -d corral_bench -c "select now()::time, n_tup_upd, n_tup_hot_upd, n_dead_tup, (select count(*) from pg_stat_activity where backend_xmin is not null), (select min(age(backend_xmin)) || '/' || max(age(backend_xmin)) from pg_stat_activity), (select string_agg(distinct state||':'||coalesce(application_name,''),',') from pg_stat_activity where datname='corral_bench'), (select string_agg(ctid::text,' ') from (select ctid from pgbench_accounts where aid<=20 order by aid) s) from pg_stat_user_tables where relname='pgbench_accounts'" 2>/dev/null
  sleep 1
done
