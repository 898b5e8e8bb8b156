import os

from hypothesis import HealthCheck, settings

# A fixed, modest example count in CI; HYPOTHESIS_PROFILE=thorough by hand for a longer search.
settings.register_profile("ci", max_examples=300, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("thorough", max_examples=20000, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
