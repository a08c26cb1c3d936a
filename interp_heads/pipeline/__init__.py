"""The application: a run's steps (baseline, attribute, sweep, tables, report) over a run folder."""
