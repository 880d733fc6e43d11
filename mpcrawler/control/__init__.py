"""Control of a running crawl: ``control DIR COMMAND`` and ``control --redis``.

- :mod:`.commands`: what each command is, checked and described (pure);
- :mod:`.inbox`: the job dir's inbox and answers (one node);
- :mod:`.shared`: a shared crawl's inbox and answers, in Redis (every node);
- :mod:`.steering`: the master's side, which applies each command to the running crawl;
- :mod:`.rulecommands`: ``add-seeds`` and ``exclude``, carried out on the engine's parts.
"""

INTERFACE = ("commands", "inbox", "shared", "steering", "rulecommands")  # what the layers import
