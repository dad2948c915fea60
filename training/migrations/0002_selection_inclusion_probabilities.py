"""The drawn variant's probabilities by their names: the item's marginal inclusion probability
(was `propensity`) and, for two-stage rules, its query's and its own given the query."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("training", "0001_initial")]

    operations = [
        migrations.RenameField(
            model_name="trainingselection", old_name="propensity", new_name="inclusion_probability"
        ),
        migrations.AddField(
            model_name="trainingselection",
            name="query_inclusion_probability",
            field=models.FloatField(
                blank=True, help_text="drawn two-stage: the query's inclusion probability", null=True
            ),
        ),
        migrations.AddField(
            model_name="trainingselection",
            name="document_inclusion_probability_given_query",
            field=models.FloatField(
                blank=True,
                help_text="drawn two-stage: the item's inclusion probability given its query",
                null=True,
            ),
        ),
    ]
