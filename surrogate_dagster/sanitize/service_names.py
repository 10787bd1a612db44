"""Service names for keyword-near-token detection (`keyword_tokens`), as data.

Public names of SaaS, cloud, payment, messaging, monitoring, AI and developer-tool services
whose API keys are plain random strings (no prefix of their own), the way secret scanners key
their detectors (a service word, then a credential-shaped token within a short window). Names
that are ordinary English or code words (`square`, `render`, `segment`, `linear`, `box`) are
left out: next to a hash or an id they would be noise, and the value shape alone cannot tell.
So are services whose own tokens carry a prefix and whose name stands next to commit and
revision hashes all day (GitHub, GitLab, Bitbucket, Hugging Face, Terraform lock files, Azure
subscription ids): their prefixed rules cover them.
One name per line, lower case; a name matches as a whole word or a name part
(`MAILGUN_KEY`, `mailgunKey`, `Mailgun`).
"""
from __future__ import annotations

SERVICE_NAMES: tuple[str, ...] = tuple(sorted(set("""
abbysale abstractapi abuseipdb accuweather adafruit adobe aeroworkflow agora airbrake airtable airvisual
aiven alchemy algolia alibaba allsports alphavantage amadeus amplitude anthropic anypoint apify apilayer
apiflash appcues appfollow appointedd appsynergy appveyor artifactory asana assemblyai atlassian auth0
autodesk autoklose autopilot avazapersonal aviationstack axonaut aylien ayrshare bannerbear baremetrics
beamer bitbar bitfinex bitly bitmex bitquery blazemeter blitapp blocknative bombbomb boostnote
braintree brandfetch browserstack buddyns bugherd bugsnag buildkite bulbul bulksms calendly campayn
cannyio capsulecrm captaindata carboninterface cashboard caspio censys centralstationcrm chartmogul
checkvist cicero circleci clarifai clearbit clickhelp clicksendsms clickup clockify clockworksms
closecrm cloudconvert cloudflare cloudimage cloudinary cloudmersive cloudplan cloudsmith coinapi coinbase
coinlayer coinlib commercejs commodities companyhub confluent contentful convertkit convier
 countrylayer coveralls craftmypdf crowdin currencycloud currencylayer currentsapi
customerguru customerio datadog datagov deepai deepgram deepl delighted detectify diffbot
digitalocean discord disqus dnscheck docparser documo docusign doppler dotmailer dovico dronahq
dropbox duply dwolla dynalist dynatrace easyinsight edamam edenai eightxeight elasticemail elevenlabs
enablex endorlabs etherscan ethplorer eventbrite everhour exchangerates exportsdk
extractorapi facebook faceplusplus fastly fastforex feedier figma fileio finage financialmodelingprep
findl finnhub fixerio flatio fleetbase flickr flightapi flightstats flowflu flutterwave fmfw
formbucket formio formsite foursquare frameio freshbooks freshdesk fulcrum fullstory fusebill
fxmarket geckoboard geoapify geocodio geocodify geoipifi getemail getgeoapi getgist
getresponse gitguardian gitter glassnode gocanvas gocardless goodday grafana graphcms
graphhopper groovehq gumroad gyazo happi happyscribe hellosign helpcrunch helpscout
hereapi heroku hiveage holidayapi honeycomb hubspot hypertrack
 iconfinder iexcloud imagekit imagga infura insightly instabot instamojo intercom intrinio
invoiceocean ipapi ipgeolocation ipify ipinfo ipquality ipstack jotform jumpcloud juro karmacrm
keenio kickbox klaviyo klipfolio knapsackpro kontent kucoin kylas languagelayer lastfm launchdarkly
leadfeeder lendflow lessannoyingcrm lexigram linkpreview liveagent livestorm loadmill locationiq
loggly loginradius logzio lokalise loyverse luno madkudu magicbell mailboxlayer mailerlite mailgun
mailjet mailmodo mailsac mandrill mapbox mapquest marketstack mattermost mavenlink maxmind
meaningcloud mediastack meistertask mercadopago messagebird metaapi metrilo midise mindmeister
 mixmax mixpanel mockaroo monkeylearn moonclerk moosend moralis mrticktock
myfreshworks myintervals nasdaqdatalink nethunt netlify neutrinoapi newrelic newsapi newscatcher
nexmo nftport ngc ngrok nicereply noticeable npmjs nylas oanda okta omnisend onedesk
onelogin onepagecrm onesignal onfleet openai opencagedata opengraphr openuv openweather opsgenie
optimizely owlbot packagecloud pagerduty pandadoc pandascore paperform paralleldots parsehub 
parseur partnerstack passbase pastebin paydirtapp paymoapp paymongo paypal paystack pdflayer pdfshift
peopledatalabs pepipost pinata pipedream pipedrive pivotaltracker pixabay plaid planetscale
planviewleankit planyo plivo podio pollsapi poloniex positionstack postageapp postman postmark
powrbot prodpad prospectcrm protocolsio proxycrawl pubnub pulumi purestake pushbullet 
qase qualaroo qubole quickmetrics rapidapi rawg razorpay reallysimplesystems rebrandly
recurly refiner rentman repairshopr restpack revampcrm ringcentral ritekit roaring rocketreach
rockset rownd rubygems runrunit saladcloud salesblink salescookie salesflare salesforce salesmate
satismeter saucelabs scalewaycloud scalr scrapeowl scraperapi scraperbox scrapestack scrapfly scrapingant
scrapingbee screenshotapi screenshotlayer securitytrails segmentio selectpdf sendbird
sendgrid sendinblue sentry serpapi serpstack sheety sherpadesk shipday shodan shopify shotstack
shutterstock signalwire signaturit signupgenius sigopt simplesat simplynoted simvoly sinchmessage
sirv siteleaf skrappio skybiometry slack smartsheets smartystreets smooch snipcart snowflake snyk
sonarcloud sparkpost speechtext spoonacular sportradar sportsmonk spotify 
squarespace stackhawk statuscake statuspage stitchdata stockdata storecove stormglass storyblok
storychief strava stripe stytch sugester supabase surveyanyplace surveybot surveysparrow
survicate swiftype tallyfy tatumio taxjar teamgate teamwork technicalanalysisapi tefter telegram
telnyx testingbot textmagic theoddsapi thinkific thousandeyes ticketmaster tickettailor
tiingo timecamp timezoneapi tineswebhook tmetric todoist toggl tokeet tomorrowio tomtom tradier
transferwise travelpayouts travis trello twelvedata twilio twitch twitter tyntec typeform typetalk
ubidots uclassify unifyid unplugg unsplash upcdatabase uplead uploadcare upwave urlscan userflow
userstack vatlayer vbout vercel verimail veriphone versioneye viewneo virustotal visualcrossing
voicegain voodoosms vouchery vpnapi vultr vyte walkscore weatherbit weatherstack webex webflow webscraper
webscraping websitepulse whoxy wistia worksnaps workstack worldcoinindex worldweather wrike
yandex yelp youneedabudget yousign youtube zapier zenkitapi zenrows zenscrape zenserp zeplin zerobounce
zipapi zipbooks zipcodeapi zipcodebase zonkafeedback zulip zendesk zoho 
""".split())))
