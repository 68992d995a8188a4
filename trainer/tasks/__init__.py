"""What the trainer trains on: a task gives ``items`` (questions), a reward per episode and, optionally, its own
toolbox, judged grading (``grade``) and run inputs (``run_input``).

* ``benchmark`` -- a harness benchmark judged by its judge's own code (``task.benchmark`` in a recipe);
* ``toy`` -- the addition toy ("What is a + b?") of the smoke and MarsRL tiny recipes;
* ``lookup`` -- capitals of invented countries with an offline search toolbox (the MARS, MATPO and M-ASK tiny
  recipes).
"""
