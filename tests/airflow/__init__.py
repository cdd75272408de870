"""The Airflow side: hooks, operators, sensors, triggers, quality, the UI page and the DAGs."""
