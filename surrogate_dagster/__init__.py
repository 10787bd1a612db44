"""surrogate_dagster: the code location and the pipeline's code, by phase (README "Layout").

Importing the package makes every log record of the process scrubbed of secrets when it is made
(`scrub.install_log_scrub`): no handler, Dagster's event log and compute logs included, sees a
credential a server echoed.
"""

from .scrub import install_log_scrub

install_log_scrub()
