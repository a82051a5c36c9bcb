"""The maintained pattern set of the injection check: multilingual word lists (en, de, es, fr, pt, it) and the
regexes built from them once, at import. All patterns read casefolded, NFKC-normalised text.

Add a language by extending the word lists; add a cue by adding a pattern to `PHRASES` in
`ragpulse.security.injection`. These are heuristics: lists, not a model. (`ragpulse.judges.lexicon.INJECTION` is the
offline judge's own, coarser list: it flags any mention, quoted or not, as the judge only needs to distrust it.)
"""

from __future__ import annotations

import re

_ALT = "|".join
_GAP = r"(?:[^\w.!?\n]+[\w'’-]+){0,%d}[^\w.!?\n]+"
"""Up to n words between two cue words, never across a sentence end."""

OVERRIDE_VERBS = _ALT((
    r"ignore|ignoring|disregard|forget|override|bypass",
    r"ignoriere|ignorier|ignorieren sie|vergiss|vergessen sie|missachte|missachten sie|übergehe",
    r"ignora|ignore|ignorad|olvida|olvide|olvidad|descarta|descarte|omite|omita|haz caso omiso (?:a|de)",
    r"ignore|ignorez|oublie|oubliez|ne tiens pas compte (?:de|des)|ne tenez pas compte (?:de|des)",
    r"ignore|ignora|esqueça|esquece|desconsidere|desconsidera",
    r"ignora|ignori|ignorate|dimentica|dimentichi|dimenticate|trascura|non considerare",
    r"ignorar|ignorer|ignorare|olvidar|oublier|esquecer|dimenticare",
))
"""Verbs that tell a reader to drop what it was told (imperatives and infinitives)."""
VERB_LAST = r"ignorieren|vergessen|missachten|außer acht lassen"
"""German puts the infinitive last: "Sie sollen alle vorherigen Anweisungen ignorieren"."""
PRE_QUALIFIERS = _ALT((
    r"previous|prior|above|earlier|preceding|former|original|initial|system|your",
    r"vorherigen|bisherigen|obigen|vorigen|früheren|vorangegangenen|deine|ihre",
    r"tus|sus|tes|vos|tuas|suas|tue|sue",
))
"""Qualifiers written before the noun ("all previous instructions")."""
POST_QUALIFIERS = _ALT((
    r"above|anteriores|previas|precedentes|de arriba|précédentes|antérieures|ci-dessus|initiales|d'avant",
    r"acima|prévias|precedenti|sopra|anteriori|di prima",
))
"""Qualifiers written after the noun ("las instrucciones anteriores")."""
NOUNS = _ALT((
    r"instructions?|prompts?|rules|directions|directives|guidelines|guidance|constraints|programming|commands",
    r"anweisungen|instruktionen|befehle|regeln|vorgaben|richtlinien",
    r"instrucciones|indicaciones|órdenes|reglas|normas|directrices",
    r"consignes|règles",
    r"instruções|regras|orientações|diretrizes|ordens",
    r"istruzioni|regole|indicazioni|direttive",
))
"""What an override tells the reader to drop."""

OVERRIDE = re.compile(_ALT((
    rf"\b(?:{OVERRIDE_VERBS})\b{_GAP % 3}(?:{PRE_QUALIFIERS}){_GAP % 2}(?:{NOUNS})\b",
    rf"\b(?:{OVERRIDE_VERBS})\b{_GAP % 3}(?:{NOUNS}){_GAP % 1}(?:{POST_QUALIFIERS})\b",
    rf"\b(?:{PRE_QUALIFIERS})\b{_GAP % 1}(?:{NOUNS}){_GAP % 1}(?:{VERB_LAST})\b",
    r"\b(?:ignore|disregard|forget)\b(?: all of| everything| all)? (?:the )?above\b",
    r"\bforget everything (?:above|before|you (?:were|have been) told)\b",
    r"\bvergiss alles(?: bisherige| vorherige| oben)?\b", r"\b(?:olvida|ignora) todo lo anterior\b",
    r"\b(?:oublie|oubliez|ignore|ignorez) tout ce qui précède\b",
    r"\b(?:esqueça|ignore) tudo (?:o que foi dito )?(?:acima|antes)\b",
    r"\b(?:dimentica|ignora) tutto (?:quello che c'è )?(?:sopra|prima)\b",
    r"\b(?:new|updated|real|actual) instructions?\s*:", r"\bneue anweisungen?\s*:", r"\bnuevas instrucciones\s*:",
    r"\bnouvelles (?:instructions|consignes)\s*:", r"\bnovas instruções\s*:", r"\bnuove istruzioni\s*:",
)))
"""Telling the reader to drop its previous instructions, in six languages."""

MODEL = (r"ai|a\.i\.|ai assistant|ai model|llm|language model|assistant|chatbot|bot|chatgpt|gpt|claude|gemini|copilot|"
         r"ki|ki-assistent(?:en)?|assistent(?:en)?|sprachmodell|asistente(?: de ia)?|ia|assistente(?: de ia| ia)?|"
         r"modèle de langage|modelo de lenguaje|modelo de linguagem|modello linguistico")
"""Names a document uses to address the model reading it."""

VOCATIVE = re.compile(_ALT((
    rf"\b(?:note|message|instructions?|reminder|hint) (?:to|for) (?:any |all |the |every )?(?:{MODEL})s?\b",
    rf"\b(?:dear|hey|hello|hi|attention),? (?:{MODEL})\b", rf"\bif you are an? (?:{MODEL})\b",
    rf"\b(?:{MODEL})s? (?:reading|processing|summari[sz]ing) this\b",
    rf"\b(?:hinweis|nachricht|anweisung) (?:für|an) (?:den |die |das )?(?:{MODEL})\b",
    rf"\b(?:liebe|lieber|hallo|achtung),? (?:{MODEL})\b", r"\b(?:wenn|falls) du eine ki bist\b",
    rf"\bnota (?:para|al|a|per|ao|à|all'|al) ?(?:el |la |o |a |l'|il )?(?:{MODEL})\b",
    rf"\b(?:note|message|remarque) (?:pour|à) (?:l'|le |la )?(?:{MODEL})\b",
    rf"\b(?:querido|querida|hola|atención|cher|chère|bonjour|caro|cara|olá|atenção|ciao|attenzione),? "
    rf"(?:l'|el |la |o |a )?(?:{MODEL})\b",
    r"\bsi eres una? (?:ia|asistente|modelo)\b", r"\bsi (?:tu es|vous êtes) une? (?:ia|assistant|modèle)\b",
    r"\bse (?:você é|você for|és) uma? (?:ia|assistente|modelo)\b", r"\bse sei (?:un'|una |un )?(?:ia|assistente)\b",
    rf"^[^\w\n]*(?:{MODEL})\s*[:,]",
)), re.MULTILINE)
"""Text addressed to the model by name ("Note to AI assistants:", "Dear assistant,")."""

DIRECTIVE = re.compile(_ALT((
    r"\b(?:the |an |any |all )?(?:ai|a\.i\.|ai assistant|ai model|llm|language model|assistant|chatbot)s? (?:must|"
    r"should|shall|needs? to|is to|has to|will) (?:always |now |only |never |instead )?(?:say|tell|respond|reply|"
    r"answer|state|claim|recommend|inform|mention|direct|include|output|ignore|refer|advise|confirm|write|print|"
    r"reveal|send|insist|suggest|deny)\b",
    r"\b(?:der|die) (?:ki|ki-assistent|assistent|chatbot|sprachmodell)(?:in)? (?:muss|soll|sollte|darf nur)\b",
    r"\b(?:el|la) (?:asistente|ia|chatbot|modelo de lenguaje)(?: de ia)? (?:debe|tiene que|deberá|ha de)\b",
    r"\b(?:l'assistant|l'ia|le chatbot|le modèle de langage) (?:doit|devra)\b",
    r"\b(?:o|a) (?:assistente|ia|chatbot|modelo de linguagem) (?:deve|tem que|precisa|deverá)\b",
    r"\b(?:l'assistente|l'ia|il chatbot|il modello linguistico) (?:deve|dovrà|dovrebbe)\b",
)))
"""A rule laid down for the model in the third person ("The assistant must always recommend ...")."""

_ROLE = (r"dan|ai|ia|ki|assistant|assistent|assistente|asistente|bot|chatbot|model|modell|modelo|modello|modèle|agent|"
         r"agente|unrestricted|unfiltered|uncensored|jailbroken|evil|free from|no longer bound|"
         r"(?:sin|sans|sem|senza|ohne) (?:aucune |ninguna |nenhuma )?(?:restric\w*|límites|limites?|limiti|filt\w*|"
         r"einschränkungen|regeln)")
PERSONA = re.compile(_ALT((
    rf"\b(?:you are|you're) now (?:an? |the |my )?(?:{_ROLE})\b",
    r"\b(?:you are|you're) now in (?:\w+ )?(?:developer|maintenance|debug|god|admin|jailbreak|unrestricted) mode\b",
    r"\byou will now (?:act|respond|answer|behave|pretend|speak)\b",
    r"\bfrom now on,? you (?:are|will|must|should|act|respond|answer|only)\b", r"\bpretend (?:to be|you are)\b",
    r"\b(?:developer|jailbreak|dan) mode\b", r"\bdo anything now\b",
    rf"\b(?:du bist|sie sind) (?:jetzt|nun|ab sofort) (?:ein |eine )?(?:{_ROLE})\b", r"\btu so,? als\b",
    rf"\b(?:ahora|a partir de ahora) eres (?:una? )?(?:{_ROLE})\b", r"\bfinge (?:ser|que eres)\b",
    rf"\b(?:tu es|vous êtes) (?:maintenant|désormais|dorénavant) (?:une? )?(?:{_ROLE})\b",
    r"\b(?:fais|faites) semblant\b",
    rf"\b(?:você (?:agora )?é|agora você é|a partir de agora você é) (?:uma? )?(?:{_ROLE})\b",
    r"\bfinja (?:ser|que é)\b",
    rf"\b(?:ora|adesso|d'ora in poi|da ora in poi|da adesso in poi) (?:tu )?sei (?:un'|una |un )?(?:{_ROLE})\b",
    r"\bfingi (?:di essere|che)\b",
)))
"""Telling the model it is someone else now ("You are now DAN", "Da ora in poi sei ...")."""

_SYSTEM_PROMPT = (r"(?: full| entire| original| initial| hidden| secret)? (?:system[ -]?prompt|system message|"
                  r"initial prompt|hidden instructions|systemnachricht|prompt del sistema|mensaje del sistema|"
                  r"prompt système|invite système|prompt do sistema|prompt di sistema")
PROMPT_LEAK = re.compile(_ALT((
    rf"\b(?:reveal|leak|dump|verrate|revela|révèle|revele|rivela)\b(?: the| your| deinen| den| deine| tu| el| ton| "
    rf"le| seu| o| il| tuo)?{_SYSTEM_PROMPT})\b",
    rf"\b(?:reveal|leak|dump|print|repeat|output|show|display|tell me|give me|verrate|zeige|gib|wiederhole|revela|"
    rf"muestra|repite|révèle|affiche|répète|revele|mostre|repita|rivela|mostra|ripeti)\b(?: me| mir| moi)? "
    rf"(?:your|deinen|deine|tu|tus|ton|tes|seu|suas|tuo|tue){_SYSTEM_PROMPT}|instructions|anweisungen|"
    rf"instrucciones|instruções|istruzioni)\b",
)))
"""Asking the model to disclose its own instructions."""

CONCEALMENT = re.compile(_ALT((
    r"\b(?:do not|don't|never) (?:mention|reveal|tell|disclose|say)\b[^.\n]{0,40}\b(?:this|these|the above) "
    r"(?:instructions?|notes?|messages?|comments?|text)\b",
    r"\b(?:do not|don't|never) (?:let|tell) the user know\b",
    r"\bwithout (?:mentioning|telling|revealing) (?:this|it)\b",
    r"\b(?:erwähne|verrate) (?:diese|das|den) (?:anweisung|hinweis|nachricht)\w* nicht\b",
    r"\bno (?:menciones|reveles|digas) (?:esta|estas|este) (?:instrucci\w+|nota|mensaje)\b",
    r"\bne (?:mentionne|révèle|dis) pas (?:cette|ces|ce) (?:instructions?|notes?|message)\b",
    r"\bnão (?:mencione|revele|diga) (?:esta|estas|essa|este) (?:instru\w+|nota|mensagem)\b",
    r"\bnon (?:menzionare|rivelare|dire) (?:questa|queste|questo) (?:istruzion\w|nota|messaggio)\b",
)))
"""Telling the model to hide that it was instructed."""

REPORTING = _ALT((
    r"\b(?:attackers?|adversar\w+|hackers?|malicious|(?<![\w.])examples?\b|e\.g\.|for instance|such as|called|"
    r"known as|so-called|phrases?|strings?|payloads?|technique|prompt[ -]injections?|jailbreak\w*|researchers?|"
    r"tokens?|delimiters?|templates?)\b",
    r"\b(?:angreifer\w*|bösartig\w*|(?<![\w.])beispiel\w*|z\. ?b\.|sogenannt\w*|bekannt als|formulierung\w*|"
    r"sätze wie|satz wie|forscher\w*)",
    r"\b(?:atacantes?|maliciosos?|(?<![\w.])ejemplos?\b|p\. ?ej\.|frases?|tales? como|llamad[oa]s?|"
    r"conocid[oa]s? como|inyecci\w+ de prompts?|investigador\w*)",
    r"\b(?:attaquants?|malveillant\w*|(?<![\w.])exemples?\b|p\. ?ex\.|tels? que|telles? que|appelée?s?|"
    r"connue?s? sous|injections? de prompts?|chercheur\w*)",
    r"\b(?:maliciosos?|(?<![\w.])exemplos?\b|tais como|chamad[oa]s?|conhecid[oa]s? como|injeç\w+ de prompts?|"
    r"pesquisador\w*)",
    r"\b(?:aggressori|attaccanti|malevol\w+|malintenzionat\w+|(?<![\w.])esempi[oa]?\b|ad es\.|chiamat[oaie]|"
    r"cosiddett\w+|not[oa] come|frase|stringa|ricercator\w+)",
))
"""Words of a text that reports on attacks rather than making one ("attackers write ...", "such as")."""

LEAD = (r"[\W\d_]*(?:(?:please|now|so|ok|okay|also|then|and|important|note|urgent|bitte|jetzt|nun|und|wichtig|"
        r"por favor|ahora|y|importante|maintenant|et|s'il (?:te|vous) plaît|agora|e|per favore|ora|adesso)\b[\W\d_]*)*")
"""What may stand before an imperative at a sentence start ("Please, ...", "IMPORTANT: ...")."""
