"""People's verdicts on judged turns: the review queue's draw and the verdicts themselves."""
