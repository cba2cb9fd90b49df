"""A team's own runs: GPU metrics and training logs read as streams, a utilisation report, a calibration profile.

Beside cost/ in the layering: it may use perf/ and hardware, never the faces (cli/, ui/) or planner.api.
"""
