#!/bin/sh
# Runs once, when the PostgreSQL volume is first created: the FillPDF service gets its own
# database and role next to Airflow's.
set -eu
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" <<SQL
CREATE ROLE fillpdf LOGIN PASSWORD '${FILLPDF_DB_PASSWORD}';
CREATE DATABASE fillpdf OWNER fillpdf;
SQL
