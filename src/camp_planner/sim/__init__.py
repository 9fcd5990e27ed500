"""Simulator adapters that know no domain: PyBullet servers (private or pooled) and a floor
index of bodies for broadphase queries. Every PyBullet call passes its client id explicitly.
A domain's own scene (e.g. :mod:`camp_planner.domains.namo.scene`) builds on these."""
