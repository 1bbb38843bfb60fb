"""The benchmarking service of the SGBench paper (§5.2): users upload a model's output, a worker scores it with
``sgg-eval evaluate`` on test ground truth that stays on the server, and the result appears on a leaderboard
(docs/service.md).

Built from standard parts, none written here: Django (pages, accounts, sessions, CSRF, password hashing, the admin,
schema migrations), Celery (the queue: an embedded filesystem broker by default, Redis or RabbitMQ with workers on
other machines at scale), SQLite by default and PostgreSQL at scale, waitress (the WSGI server) and WhiteNoise (its
static files). They are the optional extra ``sgg-eval[service]``: ``import sgg_eval`` loads none of them.

Modules: ``settings`` (everything from the environment), ``models``, ``benchmarks`` (the benchmarks' file),
``intake`` (an upload taken in: limits, SHA-256, visibility), ``scoring`` (one evaluation in a child process with
memory and time limits), ``jobs`` (what a worker does with a submission), ``queue`` (the Celery app and its task),
``embedded_broker`` (the embedded queue's files, written whole), ``tokens``, ``forms``, ``views`` (pages), ``api``
(the token API and the exports), ``boards`` (leaderboard rows), ``admin``, ``urls``, ``wsgi``, ``launch``
(``sgg-eval serve`` and ``sgg-eval worker``), ``leftovers`` (what a killed process leaves, cleared by the next),
``storage`` (a full disk), ``unavailable`` (the database gone: 503), ``backup`` (`sgg-eval manage backup` and
`sgg-eval manage restore`, commands in ``management``), ``result_page`` and ``simulated`` (the default benchmarks).
"""
