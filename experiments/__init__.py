"""Command line, runner, results, reports and sweeps."""
