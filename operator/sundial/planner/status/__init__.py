"""The working copy of one pass (DESIGN §4): the :class:`~.drafts.Draft` every room mutates, frozen once into
the new ``ScheduledJobStatus``, and the ``metav1.Condition`` bookkeeping (``lastTransitionTime`` moves only on a
status flip). It decides nothing; it imports only the vocabulary (plans, actions)."""
