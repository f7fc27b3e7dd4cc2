"""Time series for dashboards: the InfluxDB schema, line formatting, writer and outbox."""
