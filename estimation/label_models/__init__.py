"""Label models: p(grade | item) from item features, with priors."""
