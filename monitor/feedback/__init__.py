"""People's verdicts on judged turns: the review queue's draw and the verdicts themselves.

``verdicts`` (the record and the sides of a metric's defect rule), ``otlp`` (verdicts sent as GenAI
evaluation events), ``store`` (their table in the result store), ``join`` (each verdict met with the
judge's score for the same trace and metric), ``metrics`` (the agreement counter and gauges),
``review`` (the review queue's stratified draw).
"""
