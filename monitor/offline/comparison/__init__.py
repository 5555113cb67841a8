"""The Azure seed's jailbreak comparison, offline: content-risk defect rates of a baseline data
set vs the same set with jailbreak injections in the first turn.

``stats.py`` rates, Wilson intervals and Newcombe's interval for a difference · ``verdicts.py``
a row's verdict per risk category from its turns' scores · ``report.py`` the comparison, its
text and JSON forms and the CI gate · ``run.py`` the ``rag-monitor compare`` command.
"""
