"""Writes: every state change of the app goes through a function of these modules, imported from
its module (`from labeling.services.campaigns import campaign_create`).

Names follow `<entity>_<action>`; each write runs in a transaction.
"""
