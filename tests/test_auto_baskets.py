"""On baskets, auto's PLAN (the binary instantiation) is predicted as CM and wins the tie."""

import numpy as np
import scipy.sparse

import dpmean


def test_plan_wins_the_tie_with_cm_on_baskets():
    x = scipy.sparse.random(3000, 50, density=0.05, format="csr", random_state=2)
    x.data[:] = 1.0
    for seed in range(3):
        result = dpmean.mean(x, rho=0.5, method="auto", bounds=(0.0, 1.0), random_state=seed)
        predicted = result.diagnostics["predicted_noise"]
        assert predicted["plan"] == predicted["cm"]
        expected = "gaussian" if predicted["gaussian"] < predicted["plan"] else "plan"
        assert result.diagnostics["chosen"] == expected
        assert np.isfinite(result.mean).all()
