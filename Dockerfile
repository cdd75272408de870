# Airflow 3.3 with the FillPDF provider (operators, hook, quota page) and the `fillpdf`
# command, which also runs the FillPDF service.
FROM apache/airflow:3.3.2-python3.11

COPY --chown=airflow:root pyproject.toml README.md /opt/fillpdf/
COPY --chown=airflow:root plugins /opt/fillpdf/plugins
# The provider as a package, with S3 and the Celery executor (pinned so pip resolves at once)
RUN pip install --no-cache-dir "/opt/fillpdf[s3,celery]" "apache-airflow==3.3.2"
