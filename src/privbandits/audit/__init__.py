"""Empirical privacy audits: measured lower bounds on ε beside each mechanism's claim.

For every DP mechanism in the project, an audit builds two neighbouring inputs under the
mechanism's own neighbouring relation, runs the project's mechanism code many times on each,
and turns the best distinguishing test it finds into a 95% lower bound on ε
(:mod:`~privbandits.audit.stats`). A deliberately weakened copy (noise scaled down or one noise
term dropped, injected by the audit, never by editing the mechanism) must be caught: its
lower bound must exceed the claim. So must each mutant of the mutation suite, a learner or protocol party
weakened at its own level and driven through its public API.

This package sits above ``protocols`` (it runs their mechanisms) and below ``experiments``
(:mod:`privbandits.experiments.audits` makes each audit a store unit and a site page).

stats
    Clopper–Pearson bounds, the split-half likelihood-ratio test, exact Gaussian pair ε.
base
    :class:`MechanismAudit` (claim, relation, sampler) and :class:`Weakening`.
greedy
    The MPC learner's opened ε-greedy action.
tree
    The tree mechanism: joint-DP LinUCB and FCLUB's privatizer at a local server.
local
    Local-DP LinUCB's report and shuffle-DP LinUCB's shuffled batch.
evaluation
    The DP off-policy estimators' releases (DP-IPS, DP-SNIPS, DP-DR; Laplace and Gaussian).
crowd
    P2B's participation and threshold (crowd-blending, not DP) and the attack that applies.
end_to_end
    The learners and protocols audited through their public API (``e2e.…``).
mutants
    The mutation suite (``mutant.…``): copies of the learners and protocol parties weakened on purpose, which
    the end-to-end audits must catch.
run
    The registry of mechanisms, the audit unit (a task function), the table and the report.
calibrations
    The report's calibration tables: each Gaussian mechanism's σ under the paper's formula and the
    analytic Gaussian, and the ε that PLD and RDP accounting give the paper's σ.
cli
    ``privbandits audit``.
"""
