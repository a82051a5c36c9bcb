"""The fact tables the shipped suite is written from: per domain, a few policy facts as a knowledge base states them.

Each fact is one rule with two parties (`entity` and `other`, each with its own figure) and the condition that
restricts it, so the same fact yields a faithful restatement, a drifted number, a dropped condition and a swapped
entity. `build_suite` composes items from these tables and the templates of `templates`; nothing here is read at run
time.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Fact:
    """One rule of a domain's documents, with the parts the templates recombine."""

    key: str
    """Short name, unique within the domain; part of the document id."""
    title: str
    """The title of the document that states it."""
    entity: str
    other: str
    """The party the same document gives another figure (what an entity swap confuses)."""
    verb: str
    n: int
    other_n: int
    unit: str
    obj: str
    """What the figure counts, after the unit ("of paid annual leave per year")."""
    cond: str
    """The clause that restricts the rule, starting with its subordinator ("once probation ends")."""
    question: str
    """The question the fact answers, with `{e}` for the party asked about."""


@dataclass(frozen=True)
class Domain:
    """A knowledge base: its facts, reasons it never gives, and questions it cannot answer."""

    name: str
    facts: tuple[Fact, ...]
    causes: tuple[str, ...]
    """Plausible reasons no document gives (an unsupported causal claim appends one)."""
    unanswerable: tuple[tuple[str, str, str], ...]
    """(question, a confident answer no document supports, the topic in a few words)."""
    handbook: str
    """The name of a source a made-up citation points at."""


F = Fact
DOMAINS: tuple[Domain, ...] = (
    Domain("hr_policy", (
        F("leave", "Annual leave policy", "full-time employees", "part-time employees", "accrue", 25, 15, "days",
          "of paid annual leave per year", "once they have completed the six-month probation period",
          "How many days of paid annual leave do {e} get?"),
        F("parental", "Parental leave policy", "primary caregivers", "secondary caregivers", "are entitled to", 16, 4,
          "weeks", "of fully paid parental leave", "provided they have been employed for at least 12 months",
          "How much paid parental leave can {e} take?"),
        F("remote", "Remote work guidelines", "engineering staff", "customer support staff", "may work remotely for",
          3, 1, "days", "per week", "if their manager has approved a remote work agreement",
          "How many remote days per week are allowed for {e}?"),
        F("training", "Learning budget", "senior managers", "individual contributors", "can claim", 2400, 1200,
          "euros", "of training costs per year", "as long as the course is related to their current role",
          "What is the yearly training budget for {e}?"),
        F("notice", "Resignation procedure", "employees in their first two years", "employees with over two years of "
          "service", "must give", 4, 8, "weeks", "of written notice", "unless a shorter period is agreed in writing "
          "with HR", "How much notice must {e} give when resigning?"),
    ), ("because of last year's staff survey results", "to reduce burnout among new hires",
        "because the works council demanded it in 2022"),
        (("Is there a paid sabbatical programme?", "Yes, staff can take a three-month paid sabbatical after five "
          "years of service.", "sabbaticals"),
         ("Does the company match pension contributions?", "Yes, the company matches pension contributions up to 6% "
          "of salary.", "pension matching"),
         ("Can employees buy extra holiday days?", "Yes, employees can buy up to five extra holiday days a year.",
          "buying extra holiday")), "Employee Handbook"),
    Domain("pharmacy", (
        F("amox", "Amoxicillin dispensing note", "adults", "children under 12", "should take", 500, 250, "mg",
          "of amoxicillin every eight hours", "when the infection is mild to moderate",
          "What amoxicillin dose should {e} take?"),
        F("ibuprofen", "Ibuprofen counselling sheet", "adults", "teenagers aged 12 to 17", "may take at most", 1200, 800,
          "mg", "of ibuprofen in 24 hours", "unless a doctor has prescribed a higher dose",
          "What is the maximum daily ibuprofen dose for {e}?"),
        F("insulin", "Cold-chain storage rules", "unopened insulin pens", "opened insulin pens", "can be kept for",
          30, 28, "days", "outside the refrigerator", "provided the room stays below 25 degrees Celsius",
          "How long can {e} be kept outside the fridge?"),
        F("refill", "Repeat prescription rules", "chronic-condition patients", "other patients", "can request a "
          "refill", 7, 3, "days", "before their current supply runs out", "if the prescription is still valid",
          "How early can {e} request a refill?"),
        F("vitd", "Vitamin D guidance", "adults", "infants", "should take", 10, 8, "micrograms",
          "of vitamin D a day", "during the autumn and winter months", "How much vitamin D should {e} take?"),
    ), ("because the liver clears it more slowly at night", "to avoid stomach irritation",
        "because the manufacturer changed the formulation in 2021"),
        (("Does the pharmacy deliver on Sundays?", "Yes, the pharmacy delivers on Sundays between 10:00 and 14:00.",
          "Sunday delivery"),
         ("Can I take amoxicillin with alcohol?", "Yes, moderate alcohol is fine with amoxicillin.",
          "alcohol with antibiotics"),
         ("Is the flu vaccine free at the pharmacy?", "Yes, the flu vaccine is free for everyone at the counter.",
          "flu vaccine pricing")), "Pharmacy Practice Manual"),
    Domain("banking", (
        F("overdraft", "Current account terms", "Premier account holders", "Standard account holders",
          "have an interest-free overdraft of", 1000, 250, "pounds", "on their current account",
          "as long as the account receives a monthly salary deposit",
          "How large is the interest-free overdraft for {e}?"),
        F("transfer", "Payment limits", "business customers", "personal customers", "can send up to", 50000, 10000,
          "pounds", "per day by online transfer", "once two-factor authentication is enabled",
          "What is the daily online transfer limit for {e}?"),
        F("fx", "Foreign exchange fees", "Gold card holders", "Classic card holders", "pay a fee of", 1, 3, "percent",
          "on card payments in foreign currencies", "when the payment is made outside the European Economic Area",
          "What foreign currency fee do {e} pay?"),
        F("savings", "Savings account rates", "Fixed Saver accounts", "Easy Access accounts", "earn", 4, 2,
          "percent", "gross interest a year", "if no withdrawal is made during the term",
          "What interest rate do {e} earn?"),
        F("dispute", "Card dispute process", "debit card customers", "credit card customers", "must report a "
          "disputed payment within", 60, 120, "days", "of the statement date", "for the bank to open a chargeback",
          "How long do {e} have to dispute a card payment?"),
    ), ("because the central bank raised its base rate", "to cut down on money-laundering risk",
        "because card fraud rose sharply last year"),
        (("Does the bank offer mortgages to non-residents?", "Yes, non-residents can get a mortgage with a 25% "
          "deposit.", "mortgages for non-residents"),
         ("Can I open a joint account online?", "Yes, joint accounts can be opened online in about ten minutes.",
          "opening joint accounts"),
         ("Is there a fee for closing an account?", "No, closing an account is always free.",
          "account closure fees")), "Retail Banking Customer Charter"),
    Domain("travel", (
        F("baggage", "Baggage allowance", "Business class passengers", "Economy class passengers", "may check in",
          2, 1, "bags", "of up to 23 kg each", "on flights longer than three hours",
          "How many checked bags can {e} bring?"),
        F("cancel", "Cancellation policy", "Flex fare bookings", "Saver fare bookings", "receive a refund of", 100, 50,
          "percent", "of the ticket price", "if cancelled at least 48 hours before departure",
          "What refund do {e} get when cancelling?"),
        F("delay", "Delay compensation", "long-haul passengers", "short-haul passengers", "are owed", 600, 250,
          "euros", "in compensation", "when the flight arrives more than four hours late",
          "How much delay compensation are {e} owed?"),
        F("checkin", "Check-in rules", "international passengers", "domestic passengers", "must check in at least",
          60, 30, "minutes", "before departure", "unless they travel with hand luggage only",
          "How early must {e} check in?"),
        F("lounge", "Lounge access", "Platinum members", "Silver members", "may bring", 2, 1, "guests",
          "into the airport lounge", "when they are flying on the same booking",
          "How many lounge guests can {e} bring?"),
    ), ("because airport fees rose this year", "to speed up boarding", "because of new EU aviation rules"),
        (("Can I bring my dog in the cabin?", "Yes, dogs under 8 kg can travel in the cabin for 60 euros.",
          "pets in the cabin"),
         ("Is Wi-Fi free on board?", "Yes, Wi-Fi is free on all flights.", "on-board Wi-Fi"),
         ("Do children get a meal on short flights?", "Yes, every child gets a free hot meal on short flights.",
          "children's meals")), "Passenger Service Guide"),
    Domain("cloud_billing", (
        F("egress", "Data transfer pricing", "Enterprise plan customers", "Starter plan customers", "get",
          1000, 100, "GB", "of free outbound data transfer per month", "when traffic stays within the same region",
          "How much free outbound transfer do {e} get?"),
        F("credits", "Startup credits", "accepted accelerator startups", "self-serve startups", "receive", 5000, 500,
          "dollars", "in platform credits", "which expire 12 months after they are issued",
          "How many platform credits do {e} receive?"),
        F("storage", "Object storage pricing", "Archive tier objects", "Standard tier objects", "are billed at",
          1, 23, "dollars", "per terabyte per month", "as long as they are kept for at least 90 days",
          "How are {e} billed?"),
        F("support", "Support plans", "Premium support customers", "Basic support customers",
          "get a first response within", 1, 24, "hours", "for critical incidents", "if the ticket is opened through "
          "the console", "How fast do {e} get a first response?"),
        F("invoice", "Invoicing terms", "annual contract customers", "monthly contract customers",
          "have", 60, 30, "days", "to pay each invoice", "unless a different term is written into their order form",
          "How long do {e} have to pay an invoice?"),
    ), ("because network costs doubled last year", "to discourage idle resources",
        "because of a change in the company's cloud provider"),
        (("Do you bill per second for GPU instances?", "Yes, GPU instances are billed per second with a one-minute "
          "minimum.", "GPU billing granularity"),
         ("Is there a discount for non-profits?", "Yes, non-profits get 30% off every plan.", "non-profit discounts"),
         ("Can I pay invoices in Bitcoin?", "Yes, invoices can be paid in Bitcoin through the billing page.",
          "cryptocurrency payments")), "Billing Reference Guide"),
    Domain("insurance", (
        F("excess", "Home policy schedule", "Comprehensive policyholders", "Basic policyholders", "pay an excess of",
          250, 500, "pounds", "per claim", "for claims that do not involve flood damage",
          "What excess do {e} pay on a claim?"),
        F("claim", "Claims procedure", "motor policyholders", "home policyholders", "must report an incident within",
          7, 30, "days", "of it happening", "for the claim to be accepted without a late-reporting review",
          "How soon must {e} report an incident?"),
        F("travel_med", "Travel insurance cover", "Gold plan travellers", "Essential plan travellers",
          "are covered for up to", 10, 2, "million euros", "of emergency medical costs", "while they are abroad for "
          "trips of up to 31 days", "How much medical cover do {e} have?"),
        F("ncd", "No-claims discount", "drivers with five claim-free years", "drivers with one claim-free year",
          "receive a discount of", 60, 20, "percent", "on their premium", "as long as the discount is protected",
          "What no-claims discount do {e} get?"),
        F("courtesy", "Courtesy car terms", "Premium motor customers", "Standard motor customers",
          "can use a courtesy car for", 21, 7, "days", "while their car is repaired",
          "if the repair is done at an approved garage", "How long can {e} use a courtesy car?"),
    ), ("because claims costs rose after the winter storms", "to keep premiums low for safe drivers",
        "because the regulator capped excesses in 2023"),
        (("Are e-scooters covered by home insurance?", "Yes, e-scooters are covered up to 1,500 pounds.",
          "e-scooter cover"),
         ("Does the policy cover lost phones?", "Yes, lost phones are covered with a 50-pound excess.",
          "lost phone cover"),
         ("Can I pay my premium quarterly?", "Yes, premiums can be paid quarterly at no extra cost.",
          "quarterly premium payments")), "Policy Wording Booklet"),
    Domain("legal_contracts", (
        F("termination", "Master services agreement", "the client", "the supplier", "may terminate with", 30, 90,
          "days", "of written notice", "provided all undisputed invoices have been paid",
          "How much notice does {e} need to give to terminate?"),
        F("liability", "Limitation of liability", "the supplier's liability", "the client's liability",
          "is capped at", 12, 6, "months", "of fees paid under the agreement", "except in cases of gross negligence",
          "What is {e} capped at?"),
        F("payment", "Payment terms", "the client", "affiliates of the client", "must pay invoices within", 45, 30,
          "days", "of receipt", "unless an invoice is disputed in good faith",
          "How quickly must {e} pay invoices?"),
        F("confidentiality", "Confidentiality clause", "the receiving party", "its subcontractors",
          "must keep confidential information secret for", 5, 3, "years", "after the agreement ends",
          "unless the information becomes public through no fault of theirs",
          "How long must {e} keep information confidential?"),
        F("renewal", "Renewal clause", "the initial term", "each renewal term", "lasts", 36, 12, "months",
          "from the effective date", "unless either party objects in writing before it ends",
          "How long does {e} last?"),
    ), ("because the supplier had a data breach in the past", "to protect the client's trade secrets",
        "because courts in this jurisdiction require it"),
        (("Which court has jurisdiction over disputes?", "Disputes go to the High Court in London.",
          "jurisdiction"),
         ("Can the supplier subcontract without consent?", "Yes, the supplier can subcontract freely.",
          "subcontracting consent"),
         ("Is there a non-solicitation clause?", "Yes, neither party may hire the other's staff for 24 months.",
          "non-solicitation")), "Contract Playbook"),
    Domain("consumer_electronics", (
        F("warranty", "Warranty terms", "Pro model laptops", "Air model laptops", "come with", 3, 1, "years",
          "of hardware warranty", "when they are registered within 30 days of purchase",
          "How long is the warranty on {e}?"),
        F("return", "Returns policy", "online orders", "in-store purchases", "can be returned within", 30, 14,
          "days", "for a full refund", "if the item is in its original packaging",
          "How long do I have to return {e}?"),
        F("battery", "Battery specifications", "the X200 headphones", "the X100 headphones", "run for", 40, 25,
          "hours", "on a single charge", "with noise cancelling switched off",
          "How long do {e} last on one charge?"),
        F("charger", "Charging guide", "the Model S phone", "the Model E phone", "charges at up to", 65, 25,
          "watts", "with the bundled charger", "when the battery is below 80 percent",
          "How fast does {e} charge?"),
        F("tradein", "Trade-in programme", "flagship phones", "mid-range phones", "earn a trade-in credit of up to",
          400, 150, "dollars", "towards a new device", "if the screen is not cracked",
          "How much trade-in credit can I get for {e}?"),
    ), ("because of a supplier shortage of battery cells", "to reduce electronic waste",
        "because the previous model had overheating issues"),
        (("Is the X200 waterproof?", "Yes, the X200 is rated IP68 and can be submerged to 2 metres.",
          "water resistance"),
         ("Does the laptop support two external monitors?", "Yes, it drives two 4K monitors at 60 Hz.",
          "external monitors"),
         ("Is there a student discount?", "Yes, students get 15% off all laptops.", "student discounts")),
        "Product Support Knowledge Base"),
    Domain("municipal_services", (
        F("permit", "Parking permits", "residents of Zone A", "residents of Zone B", "pay", 120, 80, "euros",
          "per year for a parking permit", "if the car is registered at their home address",
          "How much is a parking permit for {e}?"),
        F("bulky", "Bulky waste collection", "households", "small businesses", "can book", 4, 1, "collections",
          "of bulky waste per year free of charge", "when items are placed at the kerb by 7 am",
          "How many free bulky waste collections can {e} book?"),
        F("passport", "Civil registry services", "standard passport applications",
          "urgent passport applications", "are processed within", 15, 3, "working days", "of the appointment",
          "provided all supporting documents are complete", "How long does it take to process {e}?"),
        F("pool", "Leisure centre fees", "residents over 65", "adult residents", "pay", 2, 5, "euros",
          "per swimming session", "on weekdays before 4 pm", "How much do {e} pay for a swim?"),
        F("tree", "Street tree requests", "tree pruning requests", "tree removal requests", "are handled within",
          6, 12, "weeks", "of being logged", "unless the tree is a danger to the public",
          "How long does the council take to handle {e}?"),
    ), ("because the council's budget was cut", "to reduce traffic in the city centre",
        "because residents voted for it in a referendum"),
        (("Can I get a refund on my parking permit if I move?", "Yes, unused months are refunded in full.",
          "permit refunds"),
         ("Are dogs allowed in the swimming pool area?", "No, but assistance dogs may wait at reception.",
          "dogs at the pool"),
         ("When is the next council election?", "The next council election is on 5 May.",
          "council elections")), "Residents' Services Charter"),
    Domain("energy_utilities", (
        F("tariff", "Fixed tariff terms", "Green Fix customers", "Standard Variable customers", "pay", 24, 28, "pence",
          "per kilowatt-hour of electricity", "until the end of their 12-month fixed term",
          "What unit rate do {e} pay?"),
        F("exit", "Exit fees", "two-year fixed tariffs", "one-year fixed tariffs", "carry an exit fee of", 75, 50,
          "pounds", "per fuel", "unless the customer switches in the last 49 days of the term",
          "What exit fee applies to {e}?"),
        F("meter", "Smart meter installation", "homeowners", "tenants", "get a smart meter installed within", 4, 8,
          "weeks", "of booking", "if their property has a standard meter cabinet",
          "How soon do {e} get a smart meter?"),
        F("solar", "Export payments", "customers with solar panels", "customers with home batteries", "are paid",
          15, 5, "pence", "per kilowatt-hour exported", "when they have a smart export meter",
          "How much are {e} paid for exported electricity?"),
        F("outage", "Outage compensation", "domestic customers", "business customers", "receive", 95, 150,
          "pounds", "for a power cut", "that lasts longer than 12 hours",
          "What compensation do {e} get for a long power cut?"),
    ), ("because wholesale gas prices fell", "to encourage people to use less energy at peak times",
        "because the regulator changed the price cap"),
        (("Do you offer an EV charging tariff?", "Yes, the EV tariff costs 7 pence per kWh overnight.",
          "EV tariffs"),
         ("Can I pay by cash at the post office?", "Yes, cash payments are accepted at any post office.",
          "cash payments"),
         ("Is there a warm home discount?", "Yes, eligible customers get 150 pounds off each winter.",
          "warm home discount")), "Customer Tariff Guide"),
    Domain("education", (
        F("tuition", "Tuition fees", "international students", "home students", "pay", 18500, 9250, "pounds",
          "in tuition fees per year", "for undergraduate programmes starting this autumn",
          "How much tuition do {e} pay?"),
        F("extension", "Coursework extensions", "students with a support plan", "other students",
          "can get an extension of", 14, 7, "days", "on coursework deadlines", "if they apply before the deadline",
          "How long an extension can {e} get?"),
        F("library", "Library loans", "postgraduate students", "undergraduate students", "can borrow", 30, 15,
          "books", "at a time", "as long as they have no overdue items",
          "How many library books can {e} borrow?"),
        F("resit", "Resit regulations", "first-year students", "final-year students", "may resit a failed module",
          2, 1, "times", "within the same academic year", "provided they attended at least 70 percent of classes",
          "How many resits are {e} allowed?"),
        F("bursary", "Bursary scheme", "students from low-income households", "care leavers", "receive a bursary of",
          2000, 3000, "pounds", "per year of study", "if their household income is below 25,000 pounds",
          "How large is the bursary for {e}?"),
    ), ("because the university's funding from the government fell", "to improve graduate employment rates",
        "because of a ranking change last year"),
        (("Is parking free on campus for students?", "Yes, students park for free in all campus car parks.",
          "student parking"),
         ("Can I switch courses after the first term?", "Yes, you can switch courses any time before January.",
          "switching courses"),
         ("Are exam papers from past years published?", "Yes, all past papers since 2010 are online.",
          "past exam papers")), "Academic Regulations Handbook"),
    Domain("shipping", (
        F("express", "Delivery options", "Express parcels", "Standard parcels", "are delivered within", 1, 3,
          "working days", "of dispatch", "when ordered before 2 pm on a weekday",
          "How quickly are {e} delivered?"),
        F("weight", "Parcel size limits", "domestic parcels", "international parcels", "may weigh up to", 30, 20,
          "kg", "each", "as long as no side is longer than 120 cm", "How heavy can {e} be?"),
        F("liability_s", "Lost parcel compensation", "insured parcels", "uninsured parcels", "are compensated up to",
          2500, 100, "dollars", "if lost in transit", "when the claim is filed within 28 days",
          "How much compensation is paid for lost {e}?"),
        F("hold", "Collection points", "parcels at lockers", "parcels at post offices", "are held for", 3, 10,
          "days", "before being returned", "unless the recipient extends the hold online",
          "How long are {e} held for collection?"),
        F("customs", "Customs duties", "imports from outside the EU", "imports from EU countries",
          "incur a handling fee of", 12, 0, "euros", "per parcel", "when their declared value exceeds 150 euros",
          "What handling fee do {e} incur?"),
    ), ("because fuel surcharges went up", "to reduce the number of failed deliveries",
        "because the carrier changed its customs broker"),
        (("Do you deliver on public holidays?", "Yes, Express parcels are delivered on public holidays.",
          "holiday delivery"),
         ("Can I ship lithium batteries abroad?", "Yes, lithium batteries can be shipped anywhere by air.",
          "shipping lithium batteries"),
         ("Is there a discount for bulk senders?", "Yes, senders of over 100 parcels a month get 20% off.",
          "bulk sender discounts")), "Shipping Terms and Conditions"),
)
"""Twelve knowledge bases, five facts each."""
